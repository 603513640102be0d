// stepscope HTML report: renders the page from the inline data (#stepscope-data).
// Text from traces is only ever set with textContent / createTextNode, never as markup.
"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("stepscope-data").textContent);
  const CLASSES = DATA.classes;
  const CLASS_COLOR = {
    complete: "#2e9d57", unverified: "#9aa3b2", short: "#e8912d",
    empty: "#d63c3c", damaged: "#8a4fc7", mistimed: "#2f7fd1",
  };
  // Step stages (none of them a class colour: the canvas readback counts those).
  const STAGE_COLOR = { prefill: "#c9a227", decode: "#6f93bd", mixed: "#a08c5b", other: "#bcbcbc", step: "#8d8d8d" };
  // How bad a class is (a bin is drawn in its worst class's colour).
  const SEVERITY = { complete: 0, unverified: 1, mistimed: 2, damaged: 3, short: 4, empty: 5 };
  const PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948",
    "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#86bcb6", "#d37295", "#a0cbe8", "#ffbe7d"];
  const SVG = "http://www.w3.org/2000/svg";

  // Canvases to draw once their view is in the document (they need its layout width).
  const pending = [];
  function attach(holder, view) {
    holder.replaceChildren(view);
    for (const draw of pending.splice(0)) draw();
  }

  // ---- small helpers ---------------------------------------------------------------
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    setAttrs(node, attrs);
    append(node, children);
    return node;
  }
  function svg(tag, attrs, ...children) {
    const node = document.createElementNS(SVG, tag);
    setAttrs(node, attrs);
    append(node, children);
    return node;
  }
  function setAttrs(node, attrs) {
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null) continue;
      if (key === "class") node.setAttribute("class", value);
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else if (key === "data") Object.assign(node.dataset, value);
      else node.setAttribute(key, value);
    }
  }
  function append(node, children) {
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
  }
  // As the terminal's `percent`: never 100% for less than all, never 0% for more than none.
  function percent(fraction) {
    const v = fraction * 100;
    if (v > 0 && v < 0.05) return "<0.1%";
    if (v > 99.5 && v < 100) return Math.min(v, 99.9).toFixed(1) + "%";
    if (v > 0 && v < 9.95) return v.toFixed(1) + "%";
    return v.toFixed(0) + "%";
  }
  function micros(us) {
    if (us >= 1e6) return (us / 1e6).toFixed(3) + " s";
    if (us >= 1e3) return (us / 1e3).toFixed(2) + " ms";
    return us.toFixed(1) + " µs";
  }
  function verdictWord(v) {
    return { unverified: "UNVERIFIED (complete as far as the trace shows)", "no-events": "NO-EVENTS" }[v] || v.toUpperCase();
  }
  function verdictClass(v) {
    if (v === "complete") return "good";
    if (["incomplete", "damaged", "mistimed", "no-events", "unreadable", "partial"].includes(v)) return "bad";
    return "warn";
  }
  function completenessText(n) {
    if (n.completeness !== null && n.completeness !== undefined) return percent(n.completeness);
    if (n.completeness_low <= 0) return "≤ " + percent(n.completeness_high);
    const lo = percent(n.completeness_low), hi = percent(n.completeness_high);
    return lo === hi ? "≈ " + lo : "between " + lo + " and " + hi;
  }
  function fileTitle(file) {
    const rank = file.rank === null ? "" : ` (rank ${file.rank} of ${file.world_size ?? 1})`;
    return file.path + rank;
  }
  // As the terminal's device list: `8 × unnamed GPU`, `2 × MI300X`.
  function devices(names) {
    if (!names.length) return "no device list";
    const counts = new Map();
    for (const n of names) counts.set(n, (counts.get(n) || 0) + 1);
    return [...counts].map(([n, c]) => (c > 1 ? c + " × " : "") + (n || "unnamed GPU")).join(", ");
  }
  function note(text) { return el("p", { class: "note" }, text); }
  const KERNEL_ID_NOTE = "id: the first 6 hex digits of the SHA-256 of the kernel's full name, the same in the terminal, --json, --csv and --parquet, in analyze and diff, for every file and run.";

  // A table whose header cells sort it (numbers descending first, text ascending).
  function table(columns, rows, options) {
    const opts = options || {};
    const tbody = el("tbody");
    let order = { key: opts.sortKey, down: true };
    const fill = () => {
      const sorted = rows.slice();
      if (order.key) {
        // A key that is no column sorts as numbers (a page must render whatever it sorts by).
        const col = columns.find((c) => c.key === order.key) || { num: true };
        sorted.sort((a, b) => {
          const x = a[order.key], y = b[order.key];
          const cmp = col.num ? (x ?? -Infinity) - (y ?? -Infinity) : String(x).localeCompare(String(y));
          return order.down ? -cmp : cmp;
        });
      }
      tbody.replaceChildren(...sorted.map((row) => el("tr", {},
        columns.map((c) => el("td", { class: c.num ? "n" : c.id ? "id" : c.mono ? "name" : null },
          c.fmt ? c.fmt(row[c.key], row) : row[c.key] ?? "—")))));
    };
    const head = el("tr", {}, columns.map((c) => el("th", {
      class: (c.num ? "n " : "") + "sort",
      title: "sort by " + c.label,
      onclick: () => {
        order = { key: c.key, down: order.key === c.key ? !order.down : Boolean(c.num) };
        fill();
      },
    }, c.label)));
    fill();
    const t = el("table", { class: opts.class || null, data: { table: opts.name || "" } }, el("thead", {}, head), tbody);
    return opts.scroll ? el("div", { class: "scroll" }, t) : t;
  }

  // ---- key numbers -----------------------------------------------------------------
  // A trace without graph replays gets no replay shares: "100% recorded" of none misleads.
  function keyNumbers(numbers, breakdown, scope) {
    const items = numbers.replays === 0 ? [["replays", 0, "graph replays in the trace"]] : [
      ["replays", numbers.replays, "graph replays"],
      ["recorded_replays", numbers.recorded_replays, "recorded"],
      ["short_replays", numbers.short_replays, "short"],
      ["empty_replays", numbers.empty_replays, "empty"],
      ["coverage", percent(numbers.coverage), "replays recorded"],
      ["completeness", completenessText(numbers), "nodes recorded"],
    ];
    if (breakdown) {
      items.push(["total_gpu_time", micros(breakdown.total_gpu_time_us), "GPU time recorded"]);
      const decode = breakdown.stages.find((s) => s.stage === "decode");
      if (decode) items.push(["decode_share", percent(decode.share_of_total), "decode share (recorded)"]);
    }
    return el("div", { class: "nums", data: { scope } }, items.map(([key, value, label]) =>
      el("div", { class: "num", data: { key } }, el("b", {}, value), el("span", {}, label))));
  }

  // ---- replay timeline -------------------------------------------------------------
  function worstClass(cell) {
    let worst = null;
    CLASSES.forEach((name, i) => {
      if (cell[1 + i] > 0 && (worst === null || SEVERITY[name] > SEVERITY[worst])) worst = name;
    });
    return worst;
  }
  // A bin as a stacked column: the worst class at the bottom, each class as tall as its
  // share of the bin's replays (at least 3 px, so one empty replay among hundreds shows),
  // the best class filling the rest.
  const BY_SEVERITY = () => CLASSES.map((name, i) => [name, i]).sort((a, b) => SEVERITY[b[0]] - SEVERITY[a[0]]);
  function drawCell(ctx, cell, x, top, width, height) {
    const present = BY_SEVERITY().filter(([, i]) => cell[1 + i] > 0);
    const total = present.reduce((sum, [, i]) => sum + cell[1 + i], 0);
    let bottom = top + height;
    present.forEach(([name, i], k) => {
      const last = k === present.length - 1;
      const share = Math.max(3, Math.round((height * cell[1 + i]) / total));
      const h = last ? bottom - top : Math.min(share, bottom - top);
      if (h <= 0) return;
      ctx.fillStyle = CLASS_COLOR[name];
      ctx.fillRect(x, bottom - h, width, h);
      bottom -= h;
    });
  }
  function legend(steps) {
    const swatch = (color, name) => el("span", {}, el("i", { style: "background:" + color }), name);
    return el("div", { class: "legend" }, CLASSES.map((name) => swatch(CLASS_COLOR[name], name)),
      steps ? el("span", {}, " · steps:") : null,
      steps ? DATA.stages.filter((n) => n !== "step").map((name) => swatch(STAGE_COLOR[name], name)) : null);
  }
  // A bin of the steps line: its stages side by side in the height, by how many steps.
  function drawSteps(ctx, cell, x, top, width, height) {
    const total = DATA.stages.reduce((sum, _, i) => sum + cell[1 + i], 0);
    let y = top;
    DATA.stages.forEach((name, i) => {
      if (!cell[1 + i]) return;
      const h = (height * cell[1 + i]) / total;
      ctx.fillStyle = STAGE_COLOR[name];
      ctx.fillRect(x, y, width, h);
      y += h;
    });
  }
  function niceStep(span, ticks) {
    const raw = span / ticks, mag = Math.pow(10, Math.floor(Math.log10(raw || 1)));
    return [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) || raw;
  }
  function timelineView(file, data) {
    const tl = data.timeline;
    if (!tl.rows.length) return note("No graph replays: nothing to draw.");
    const graphs = file.replay_coverage.graphs;
    // The lines drawn: the steps first (where the trace has any), then one per graph.
    const lines = tl.rows.map((row) => {
      const g = graphs.find((x) => x.graph === row.graph);
      const kernel = g && g.first_kernel ? " · " + g.first_kernel : "";
      return { kind: "graph", cells: row.cells, label: row.graph === null ? "unknown graph" : "graph " + row.graph + kernel };
    });
    if (tl.steps.length) lines.unshift({ kind: "steps", cells: tl.steps, label: "steps (host spans)" });
    const LABEL = 230, ROW = 18, AXIS = 24;
    const canvas = el("canvas", { class: "timeline", data: { rows: lines.length, bins: tl.bins } });
    const evidence = el("div", { class: "evidence", data: { evidence: "" } },
      "Hover a mark for its replays; click it for the evidence of its worst replay.");
    const spanMs = (tl.end_us - tl.start_us) / 1e3;
    const geometry = () => {
      const width = canvas.clientWidth || 900;
      return { width, plot: Math.max(50, width - LABEL - 8) };
    };
    const draw = () => {
      const { width, plot } = geometry();
      const height = lines.length * ROW + AXIS;
      const ratio = window.devicePixelRatio || 1;
      canvas.width = Math.round(width * ratio);
      canvas.height = Math.round(height * ratio);
      canvas.style.height = height + "px";
      const ctx = canvas.getContext("2d", { willReadFrequently: true });
      ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
      ctx.clearRect(0, 0, width, height);
      ctx.font = "11px system-ui, sans-serif";
      ctx.textBaseline = "middle";
      const binWidth = plot / tl.bins;
      lines.forEach((line, r) => {
        const y = r * ROW;
        ctx.fillStyle = r % 2 ? "#fafbfc" : "#f1f3f6";
        ctx.fillRect(LABEL, y, plot, ROW);
        ctx.fillStyle = "#1d2330";
        ctx.fillText(clip(ctx, line.label, LABEL - 8), 4, y + ROW / 2);
        const draw = line.kind === "steps" ? drawSteps : drawCell;
        for (const cell of line.cells) {
          // Whole pixels, at least 2 wide: a mark is crisp, never only antialiased edges.
          const x0 = Math.floor(LABEL + cell[0] * binWidth);
          const x1 = Math.max(x0 + 2, Math.floor(LABEL + (cell[0] + 1) * binWidth) - (binWidth > 3 ? 1 : 0));
          draw(ctx, cell, x0, y + 2, x1 - x0, ROW - 4);
        }
      });
      const top = lines.length * ROW;
      ctx.fillStyle = "#5b6475";
      ctx.textBaseline = "top";
      const step = niceStep(spanMs, 8);
      for (let t = 0; t <= spanMs + 1e-9 && step > 0; t += step) {
        const x = LABEL + (spanMs > 0 ? (t / spanMs) * plot : 0);
        ctx.fillRect(x, top, 1, 4);
        const tick = (step < 1 ? t.toFixed(2) : t.toFixed(0)) + " ms";
        if (x + 2 + ctx.measureText(tick).width <= width) ctx.fillText(tick, x + 2, top + 6);
      }
      canvas.dataset.painted = painted(ctx, LABEL * ratio, Math.min(top, 2000) * ratio, plot * ratio);
      const box = canvas.getBoundingClientRect();
      canvas.dataset.box = [box.left + window.scrollX, box.top + window.scrollY, box.width, box.height].map(Math.round).join(",");
    };
    const hit = (event) => {
      const { plot } = geometry();
      const rect = canvas.getBoundingClientRect();
      const x = event.clientX - rect.left - LABEL, y = event.clientY - rect.top;
      const r = Math.floor(y / ROW);
      if (x < 0 || r < 0 || r >= lines.length) return null;
      const bin = Math.min(tl.bins - 1, Math.floor((x / plot) * tl.bins));
      const cell = lines[r].cells.find((c) => c[0] === bin);
      return cell ? { line: lines[r], cell } : null;
    };
    const describe = ({ line, cell }) => {
      const binMs = spanMs / tl.bins;
      const when = line.label + "\n" + (cell[0] * binMs).toFixed(2) + "–" + ((cell[0] + 1) * binMs).toFixed(2) + " ms: ";
      if (line.kind === "steps") {
        return when + DATA.stages.map((name, i) => [name, cell[1 + i]]).filter(([, n]) => n > 0)
          .map(([name, n]) => n + " " + name).join(", ") + " step(s) overlap";
      }
      const counts = CLASSES.map((name, i) => [name, cell[1 + i]]).filter(([, n]) => n > 0);
      const total = counts.reduce((s, [, n]) => s + n, 0);
      return when + total + (total === 1 ? " replay" : " replays") + " — " +
        counts.map(([name, n]) => n + " " + name).join(", ") +
        "\ne.g. replay #" + cell[7] + " (" + worstClass(cell) + "); click for its evidence";
    };
    const tip = document.getElementById("tip");
    canvas.addEventListener("mousemove", (event) => {
      const found = hit(event);
      if (!found) { tip.hidden = true; return; }
      tip.textContent = describe(found);
      tip.style.left = Math.min(event.clientX + 14, window.innerWidth - 440) + "px";
      tip.style.top = event.clientY + 14 + "px";
      tip.hidden = false;
    });
    canvas.addEventListener("mouseleave", () => { tip.hidden = true; });
    canvas.addEventListener("click", (event) => {
      const found = hit(event);
      if (found && found.line.kind === "graph") evidence.textContent = replayEvidence(file, data, found.cell);
    });
    pending.push(draw);
    window.addEventListener("resize", draw);
    return el("div", {}, legend(tl.steps.length > 0), el("div", { class: "timeline-wrap" }, canvas), evidence);
  }
  // What the canvas holds, read back from its pixels: `class:pixels` for each class colour
  // (the first 2000 px of rows), so a test can see that the marks were drawn.
  function painted(ctx, x, height, width) {
    const rgb = CLASSES.map((name) => [name, parseInt(CLASS_COLOR[name].slice(1), 16)]);
    const counts = Object.fromEntries(CLASSES.map((name) => [name, 0]));
    const pixels = ctx.getImageData(x, 0, Math.max(1, width), Math.max(1, height)).data;
    for (let i = 0; i < pixels.length; i += 4) {
      const value = (pixels[i] << 16) | (pixels[i + 1] << 8) | pixels[i + 2];
      for (const [name, colour] of rgb) if (value === colour) counts[name]++;
    }
    return CLASSES.map((name) => name + ":" + counts[name]).join(",");
  }
  function clip(ctx, text, width) {
    if (ctx.measureText(text).width <= width) return text;
    let keep = text.length;
    while (keep > 4 && ctx.measureText(text.slice(0, keep) + "…").width > width) keep--;
    return text.slice(0, keep) + "…";
  }
  function replayEvidence(file, data, cell) {
    const replay = cell[7];
    const index = file.replay_coverage.findings.findIndex((f) => f.replay === replay);
    const worst = worstClass(cell);
    if (index < 0) {
      if (worst === "complete") return "replay #" + replay + ": complete — every expected node recorded, its graph's size corroborated.";
      return "replay #" + replay + " (" + worst + "): not among the first findings listed (the report lists " + file.replay_coverage.findings.length + ").";
    }
    const f = file.replay_coverage.findings[index];
    const [what, why] = data.findings[index];
    // Times as the timeline's axis shows them (ms from the first replay's launch); the
    // evidence is in `why`, worded as the terminal words it.
    const at = (f.launch_ts_us - data.timeline.start_us) / 1e3;
    return [f.kind + " " + what, "why: " + why, "launched at " + at.toFixed(2) + " ms on the timeline"].join("\n");
  }

  // ---- breakdown charts ------------------------------------------------------------
  function categoryColors(stages) {
    const totals = new Map();
    for (const s of stages) for (const c of s.categories) totals.set(c.name, (totals.get(c.name) || 0) + c.time_us);
    const names = [...totals.keys()].sort((a, b) => totals.get(b) - totals.get(a));
    return new Map(names.map((n, i) => [n, PALETTE[i % PALETTE.length]]));
  }
  function stageChart(breakdown) {
    const stages = breakdown.stages.filter((s) => s.gpu_time_us > 0 || s.missing_work_low_us > 0);
    if (!stages.length) return note("No GPU time recorded.");
    const colors = categoryColors(stages);
    const LABEL = 170, ROW = 30, WIDTH = 900, PLOT = WIDTH - LABEL - 150;
    const extent = (s) => s.gpu_time_us + (s.missing_work_high_us ?? s.missing_work_low_us);
    const max = Math.max(...stages.map(extent), 1);
    const chart = svg("svg", { viewBox: `0 0 ${WIDTH} ${stages.length * ROW + 4}`, width: "100%", role: "img", class: "stage-chart" },
      svg("defs", {}, svg("pattern", { id: "hatch", width: 6, height: 6, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" },
        svg("rect", { width: 6, height: 6, fill: "#fdeaea" }), svg("line", { x1: 0, y1: 0, x2: 0, y2: 6, stroke: "#d63c3c", "stroke-width": 2 }))));
    stages.forEach((s, r) => {
      const y = r * ROW + 4;
      chart.append(svg("text", { x: 0, y: y + 15 }, s.stage + " · " + percent(s.share_of_total)));
      let x = LABEL;
      for (const c of s.categories) {
        const w = (c.time_us / max) * PLOT;
        chart.append(svg("rect", { x, y, width: Math.max(w, 0.5), height: ROW - 10, fill: colors.get(c.name) },
          svg("title", {}, `${s.stage} · ${c.name}: ${micros(c.time_us)} (${percent(c.share)} of the stage)`)));
        x += w;
      }
      const low = s.missing_work_low_us, high = s.missing_work_high_us;
      if (low > 0 || (high ?? 0) > 0) {
        const w = ((high ?? low) / max) * PLOT;
        chart.append(svg("rect", { x, y, width: Math.max(w, 2), height: ROW - 10, fill: "url(#hatch)", stroke: "#d63c3c", "stroke-dasharray": "3 2" },
          svg("title", {}, `unrecorded work of ${s.unrecorded_replays} replays: at least ${micros(low)}` + (high === null ? ", no upper bound" : `, at most ${micros(high)}`))));
        x += w;
      }
      const missing = low > 0 ? ` + ≥ ${micros(low)} unrecorded` : "";
      chart.append(svg("text", { x: x + 6, y: y + 15, class: "muted" }, micros(s.gpu_time_us) + missing));
    });
    const key = el("div", { class: "legend" }, [...colors].map(([name, color]) =>
      el("span", {}, el("i", { style: "background:" + color }), name)),
    stages.some((s) => s.missing_work_low_us > 0) ? el("span", {}, el("i", { style: "background:#fdeaea;border:1px dashed #d63c3c" }), "unrecorded replay work (range)") : null);
    return el("div", {}, chart, key);
  }
  function categoryTable(breakdown) {
    const rows = [];
    for (const s of breakdown.stages) for (const c of s.categories) rows.push({ stage: s.stage, ...c });
    return table([
      { key: "stage", label: "stage" }, { key: "name", label: "category" },
      { key: "events", label: "events", num: true },
      { key: "time_us", label: "GPU time", num: true, fmt: micros },
      { key: "share", label: "share of stage", num: true, fmt: percent },
      { key: "mean_us", label: "mean", num: true, fmt: micros },
    ], rows, { name: "categories", sortKey: "time_us", scroll: true });
  }
  function kernelTable(breakdown) {
    const rows = [];
    for (const s of breakdown.stages) for (const k of s.kernels) rows.push({ stage: s.stage, ...k });
    return table([
      { key: "stage", label: "stage" }, { key: "kernel_id", label: "id", id: true },
      { key: "name", label: "kernel", mono: true },
      { key: "category", label: "category" },
      { key: "events", label: "calls", num: true },
      { key: "time_us", label: "GPU time", num: true, fmt: micros },
      { key: "share", label: "share of stage", num: true, fmt: percent },
      { key: "mean_us", label: "mean", num: true, fmt: micros },
    ], rows, { name: "kernels", sortKey: "time_us", scroll: true });
  }
  function breakdownView(breakdown, heading) {
    const method = breakdown.method === "step_annotations" ? "by the framework's step annotations"
      : "no step annotations: replayed kernels count as decode, the rest is unassigned";
    return el("div", {}, el("h2", {}, heading),
      el("p", { class: "note" }, `${micros(breakdown.total_gpu_time_us)} of GPU time recorded; stages ${method}.`),
      stageChart(breakdown), el("h3", {}, "By category"), categoryTable(breakdown),
      el("h3", {}, "Top kernels (click a column to sort)"), kernelTable(breakdown), note(KERNEL_ID_NOTE));
  }

  // ---- per-file parts --------------------------------------------------------------
  function graphTable(file) {
    const rows = file.replay_coverage.graphs.map((g) => ({
      ...g, graph: g.graph ?? "unknown",
      expected: g.expected_nodes_per_replay_low === null ? "unknown"
        : g.expected_nodes_per_replay_low === g.expected_nodes_per_replay_high ? String(g.expected_nodes_per_replay_low)
        : g.expected_nodes_per_replay_high === null ? "≥ " + g.expected_nodes_per_replay_low
        : g.expected_nodes_per_replay_low + "–" + g.expected_nodes_per_replay_high,
      completeness_text: completenessText(g),
    }));
    return table([
      { key: "graph", label: "graph", num: true }, { key: "first_kernel", label: "first kernel", mono: true },
      { key: "expected", label: "expected nodes" }, { key: "expected_source", label: "size from" },
      { key: "replays", label: "replays", num: true }, { key: "recorded_replays", label: "recorded", num: true },
      { key: "short_replays", label: "short", num: true }, { key: "empty_replays", label: "empty", num: true },
      { key: "unverified_replays", label: "unverified", num: true },
      { key: "completeness_text", label: "completeness" },
    ], rows, { name: "graphs", scroll: true });
  }
  function findingsTable(file, data) {
    const findings = file.replay_coverage.findings;
    if (!findings.length) return note("No replay with a problem.");
    if (data.settle) return el("div", {}, findingsRows(findings, data), el("p", { class: "note", data: { settle: "" } }, "to settle: " + data.settle));
    return findingsRows(findings, data);
  }
  function findingsRows(findings, data) {
    const rows = findings.map((f, i) => ({
      kind: f.kind, replay: f.replay, graph: f.graph ?? "unknown", step: f.step,
      nodes: f.recorded_nodes, what: data.findings[i][0], why: data.findings[i][1],
    }));
    return table([
      { key: "kind", label: "finding" }, { key: "replay", label: "replay", num: true },
      { key: "graph", label: "graph", num: true }, { key: "nodes", label: "recorded nodes", num: true },
      { key: "what", label: "what was recorded" }, { key: "why", label: "why" },
    ], rows, { name: "findings", scroll: true });
  }
  function importView(file) {
    const imp = file.import, dmg = file.damage;
    const counters = imp.counters.filter((c) => c.count > 0);
    const parts = [el("h2", {}, "Import and damage")];
    parts.push(el("p", {}, `${file.events.total} events read: ${file.events.kernels} kernels, ${file.events.memcpys} memcpys, ` +
      `${file.events.memsets} memsets, ${file.events.runtime_calls} runtime calls, ${file.events.annotations} annotations, ` +
      `${file.events.cpu_ops} CPU ops, ${file.events.flows} flow events.` + (imp.partial ? ` PARTIAL: the input broke off at byte ${imp.truncated_at_byte}.` : "")));
    parts.push(counters.length ? table([
      { key: "name", label: "counter" }, { key: "severity", label: "severity" },
      { key: "count", label: "count", num: true }, { key: "description", label: "what it counts" },
    ], counters, { name: "import" }) : note("Every event was read; no import counter is above zero."));
    const refused = Object.entries(dmg.refused_events);
    parts.push(el("table", { data: { table: "damage" } }, el("tbody", {},
      [["events refused for bad data", refused.length ? refused.map(([k, n]) => `${n} ${k}`).join(", ") : "none"],
        ["of them in graph replays", dmg.refused_in_replays], ["graph launches refused", dmg.refused_launches],
        ["host calls sharing a correlation id", dmg.shared_correlations], ["replays damaged", dmg.damaged_replays],
        ["kernels with no launching call (orphans)", file.replay_coverage.orphan_kernels],
      ].map(([k, v]) => el("tr", {}, el("td", {}, k), el("td", { class: "n" }, v))))));
    const unknown = Object.entries(imp.unknown_categories).concat(Object.entries(imp.unknown_fields));
    if (unknown.length) parts.push(note("Unknown categories and fields: " + unknown.map(([k, n]) => `${k} (${n})`).join(", ")));
    return el("div", {}, parts);
  }
  // `--range`: the work launched inside matching host annotations.
  function rangesView(found) {
    if (!found) return null;
    const parts = [el("h2", {}, `Ranges matching ${found.pattern}`)];
    if (!found.ranges.length) {
      parts.push(note("No host annotation matches" + (found.other_names.length ? "; some the trace has: " + found.other_names.join(", ") : ".")));
      return el("div", {}, parts);
    }
    const rows = found.ranges.map((r) => ({ ...r, top: r.categories.slice(0, 3).map((c) => `${c.name} ${percent(c.share)}`).join(", ") }));
    parts.push(table([
      { key: "name", label: "annotation", mono: true }, { key: "instances", label: "instances", num: true },
      { key: "cpu_time_us", label: "host time", num: true, fmt: micros },
      { key: "gpu_mirror_time_us", label: "GPU mirror", num: true, fmt: (v) => (v === null ? "—" : micros(v)) },
      { key: "events", label: "GPU events", num: true },
      { key: "gpu_time_us", label: "GPU time", num: true, fmt: micros },
      { key: "busy_time_us", label: "busy", num: true, fmt: micros },
      { key: "top", label: "largest categories" },
    ], rows, { name: "ranges", sortKey: "gpu_time_us" }));
    return el("div", {}, parts);
  }
  // ---- efficiency --------------------------------------------------------------------
  // Log-log roofline: arithmetic intensity (FLOP/byte) against achieved TFLOP/s, one point
  // per op row (area by kernel time), under the device's bandwidth slope and compute roofs.
  function log10(v) { return Math.log(v) / Math.LN10; }
  function rooflineChart(eff) {
    const rows = eff.ops.filter((r) => r.flops_per_byte > 0 && r.tflops && r.tflops.mean > 0);
    if (!rows.length) return null;
    const W = 900, H = 420, L = 70, B = 40, T = 12, R = 130;
    const roofs = new Map();
    for (const r of rows) {
      if (r.roofline && r.roofline.peak_tflops) roofs.set(r.compute_spec, r.roofline.peak_tflops);
    }
    const tbps = eff.device ? eff.device.hbm_tbps : null;
    const xs = rows.map((r) => r.flops_per_byte), ys = rows.map((r) => r.tflops.mean);
    for (const peak of roofs.values()) { xs.push(peak / tbps); ys.push(peak); }
    const x0 = Math.floor(log10(Math.min(...xs)) - 0.3), x1 = Math.ceil(log10(Math.max(...xs)) + 0.3);
    const y0 = Math.floor(log10(Math.min(...ys)) - 0.3), y1 = Math.ceil(log10(Math.max(...ys)) + 0.2);
    const px = (v) => L + ((log10(v) - x0) / (x1 - x0)) * (W - L - R);
    const py = (v) => H - B - ((log10(v) - y0) / (y1 - y0)) * (H - B - T);
    const chart = svg("svg", { viewBox: `0 0 ${W} ${H}`, width: "100%", role: "img", class: "roofline" });
    for (let e = x0; e <= x1; e++) {
      chart.append(svg("line", { x1: px(10 ** e), x2: px(10 ** e), y1: T, y2: H - B, class: "grid" }),
        svg("text", { x: px(10 ** e), y: H - B + 16, "text-anchor": "middle", class: "muted" }, "1e" + e));
    }
    for (let e = y0; e <= y1; e++) {
      chart.append(svg("line", { x1: L, x2: W - R, y1: py(10 ** e), y2: py(10 ** e), class: "grid" }),
        svg("text", { x: L - 6, y: py(10 ** e) + 4, "text-anchor": "end", class: "muted" }, "1e" + e));
    }
    chart.append(svg("text", { x: (L + W - R) / 2, y: H - 6, "text-anchor": "middle" }, "FLOP per byte moved"),
      svg("text", { x: 14, y: (T + H - B) / 2, transform: `rotate(-90 14 ${(T + H - B) / 2})`, "text-anchor": "middle" }, "achieved TFLOP/s"));
    for (const [spec, peak] of roofs) {
      const ridge = peak / tbps, left = 10 ** x0, right = 10 ** x1;
      const start = Math.max(left, (10 ** y0) / tbps);
      chart.append(svg("polyline", { points: `${px(start)},${py(start * tbps)} ${px(ridge)},${py(peak)} ${px(right)},${py(peak)}`, class: "roof" },
        svg("title", {}, `${eff.device.name} ${spec}: ${peak} TFLOP/s, ${tbps} TB/s`)),
        svg("text", { x: px(right) + 4, y: py(peak) + 4, class: "muted" }, `${spec} ${peak}`));
    }
    const most = Math.max(...rows.map((r) => r.kernel_time_us_sum), 1e-9);
    for (const r of rows) {
      const roof = r.roofline;
      const pct = roof && roof.pct_of_roofline !== null ? `, ${roof.pct_of_roofline.toFixed(1)}% of its roofline (${roof.bound}-bound)` : "";
      chart.append(svg("circle", { cx: px(r.flops_per_byte), cy: py(r.tflops.mean), r: 3 + 12 * Math.sqrt(r.kernel_time_us_sum / most),
        class: roof ? "op " + roof.bound : "op" },
        svg("title", {}, `${r.name} ${r.input_dims}: ${r.count} calls, ${micros(r.kernel_time_us_sum)}, ${r.tflops.mean.toFixed(2)} TFLOP/s at ${r.flops_per_byte.toFixed(1)} FLOP/byte${pct}`)));
    }
    return chart;
  }
  function efficiencyView(eff) {
    const notes = [eff.note, eff.replays_note].filter(Boolean).map(note);
    if (!eff.ops.length) return notes.length ? el("div", {}, el("h3", {}, "Efficiency"), notes) : null;
    const device = eff.device ? `on ${eff.device.name} peaks (${eff.device.identified_by})` : "device not in the peaks table (--device NAME gives the roofs)";
    const rows = eff.ops.map((r) => ({ ...r, mean: r.kernel_time_us ? r.kernel_time_us.mean : null,
      rate: r.tflops ? r.tflops.mean : null, band: r.tbps ? r.tbps.mean : null,
      bound: r.roofline ? r.roofline.bound : "—", pct: r.roofline ? r.roofline.pct_of_roofline : null,
      lost: r.roofline ? r.roofline.time_lost_us : null }));
    const two = (v) => (v === null || v === undefined ? "—" : v.toFixed(2));
    return el("div", {}, el("h3", {}, `Efficiency: op rows against the roofline, ${device}`),
      notes, rooflineChart(eff),
      table([
        { key: "name", label: "op", mono: true }, { key: "input_dims", label: "shapes", mono: true },
        { key: "count", label: "calls", num: true },
        { key: "kernel_time_us_sum", label: "kernel time", num: true, fmt: (v) => (v === null || v === undefined ? "—" : micros(v)) },
        { key: "mean", label: "mean", num: true, fmt: (v) => (v === null ? "—" : micros(v)) },
        { key: "rate", label: "TFLOP/s", num: true, fmt: two }, { key: "band", label: "TB/s", num: true, fmt: two },
        { key: "flops_per_byte", label: "FLOP/byte", num: true, fmt: two }, { key: "bound", label: "bound" },
        { key: "pct", label: "% roofline", num: true, fmt: two }, { key: "lost", label: "time lost", num: true, fmt: (v) => (v === null ? "—" : micros(v)) },
      ], rows, { name: "efficiency", sortKey: eff.device ? "lost" : "kernel_time_us_sum", scroll: true }),
      note("The rows with the most kernel time (ops around other modelled ops left out); --json, --csv and --parquet hold every row."));
  }
  // Where the GPU time goes and what held it back: the terminal's lines.
  function hostView(text) {
    if (!text) return el("div", {});
    return el("div", {}, el("h3", {}, "Where the GPU time goes: the timeline, idle causes, launches"),
      el("pre", { class: "verdict", data: { host: "file" } }, text),
      note("Idle causes per stream: host wait (the next launch came after the stream ran dry), kernel wait (queued work, gaps under 30 µs), other (queued work that waited longer); --json lists every stream."));
  }
  function fileView(section, index, multi) {
    const file = section.document.files[index], data = section.files[index];
    const steps = file.steps.framework
      ? `steps (${file.steps.framework} annotations): ` + Object.entries(file.steps.counts).map(([k, n]) => `${n} × ${k}`).join(", ")
      : "steps: no SGLang/vLLM/ATOM or ProfilerStep annotations";
    const parts = [
      el("h2", {}, fileTitle(file)),
      el("p", { class: "note" }, [devices(file.devices), file.advice.runtime, steps].join(" · ")),
    ];
    if (multi) {
      parts.push(el("span", { class: "badge " + verdictClass(file.replay_coverage.verdict) }, verdictWord(file.replay_coverage.verdict)));
      parts.push(el("pre", { class: "verdict " + verdictClass(file.replay_coverage.verdict), data: { verdict: "file" } }, data.verdict));
      parts.push(keyNumbers(file.replay_coverage, file.breakdown, "file"));
    }
    parts.push(el("h3", {}, "Replay timeline: one row per graph, each mark the replays launched there"),
      timelineView(file, data), el("h3", {}, "Graphs"), graphTable(file),
      el("h3", {}, "Replays with a problem"), findingsTable(file, data),
      breakdownView(file.breakdown, "GPU time by stage and kernel category"), hostView(data.host), rangesView(file.ranges),
      efficiencyView(file.efficiency), importView(file));
    return el("div", { class: "file", data: { file: index } }, parts);
  }

  // ---- ranks -------------------------------------------------------------------------
  // File indices in rank order (files without a rank after, in input order).
  function byRank(files) {
    return files.map((_, i) => i).sort((a, b) =>
      (files[a].rank ?? Infinity) - (files[b].rank ?? Infinity) || a - b);
  }
  function rankChart(files, select) {
    const order = byRank(files);
    const W = 900, H = 150, BASE = 120, step = W / files.length, bar = Math.max(2, step * 0.8);
    const chart = svg("svg", { viewBox: `0 0 ${W} ${H}`, width: "100%", role: "img", class: "rank-chart" });
    chart.append(svg("line", { x1: 0, y1: BASE, x2: W, y2: BASE, stroke: "#d9dde5" }));
    const every = Math.ceil(files.length / 32);
    order.forEach((index, i) => {
      const file = files[index], n = file.replay_coverage;
      const value = n.replays > 0 ? n.coverage : 1;
      const h = Math.max(2, value * (BASE - 10));
      const rect = svg("rect", {
        x: i * step + (step - bar) / 2, y: BASE - h, width: bar, height: h, fill: CLASS_COLOR[verdictClass(n.verdict) === "good" ? "complete" : verdictClass(n.verdict) === "bad" ? "empty" : "short"],
        style: "cursor:pointer", onclick: () => { select.value = String(index); select.dispatchEvent(new Event("change")); },
      }, svg("title", {}, `${fileTitle(file)}: ${verdictWord(n.verdict)}, ` + (n.replays > 0 ? `${n.recorded_replays} of ${n.replays} replays recorded (${percent(n.coverage)})` : "no graph replays")));
      chart.append(rect);
      if (i % every === 0) chart.append(svg("text", { x: i * step + step / 2, y: BASE + 14, "text-anchor": "middle", class: "muted" }, file.rank ?? index));
    });
    chart.append(svg("text", { x: 0, y: H - 4, class: "muted" }, "bar height: share of the rank's graph replays recorded; colour: its verdict; click a bar for that rank"));
    return chart;
  }

  // ---- a whole analysis --------------------------------------------------------------
  function sectionView(section) {
    const doc = section.document;
    const multi = doc.files.length > 1;
    const parts = [el("h2", {}, "Verdict"), el("span", { class: "badge " + verdictClass(doc.verdict), data: { verdictWord: doc.verdict } }, verdictWord(doc.verdict))];
    for (const w of doc.warnings) parts.push(el("p", { class: "note" }, "warning: " + w));
    for (const f of doc.failed_files) parts.push(el("pre", { class: "verdict bad" }, `could not be read: ${f.path}\n${f.error}`));
    if (multi && doc.combined) {
      parts.push(el("pre", { class: "verdict " + verdictClass(doc.verdict), data: { verdict: "combined" } }, section.combined_verdict));
      parts.push(keyNumbers(doc.combined.replay_coverage, doc.combined.breakdown, "top"));
    } else if (doc.files.length) {
      const file = doc.files[0];
      parts.push(el("pre", { class: "verdict " + verdictClass(file.replay_coverage.verdict), data: { verdict: "file" } }, section.files[0].verdict));
      parts.push(keyNumbers(file.replay_coverage, file.breakdown, "top"));
    }
    const holder = el("div");
    if (multi) {
      const select = el("select", { "aria-label": "rank" }, byRank(doc.files).map((i) =>
        el("option", { value: String(i) }, `${fileTitle(doc.files[i])} — ${verdictWord(doc.files[i].replay_coverage.verdict)}`)));
      select.addEventListener("change", () => attach(holder, fileView(section, Number(select.value), true)));
      parts.push(el("h2", {}, "Coverage rank by rank"), rankChart(doc.files, select), el("div", { class: "row" }, el("label", {}, "Show rank: "), select));
      if (doc.combined && doc.combined.breakdown) parts.push(breakdownView(doc.combined.breakdown, "All ranks: GPU time by stage and kernel category"));
      if (doc.combined) parts.push(rangesView(doc.combined.ranges));
    }
    if (doc.files.length) holder.append(fileView(section, byRank(doc.files)[0], multi));
    parts.push(holder);
    return el("section", { class: "report", data: { section: section.label } }, parts);
  }

  // ---- a comparison ------------------------------------------------------------------
  function signed(us) { return (us > 0 ? "+" : us < 0 ? "−" : "") + micros(Math.abs(us)); }
  function relative(r) { return r === null || r === undefined ? "new" : (r > 0 ? "+" : "") + (r * 100).toFixed(1) + "%"; }
  function deltaCell(us) { return el("span", { class: us > 0 ? "up" : us < 0 ? "down" : null }, signed(us)); }
  function sideCard(name, side) {
    const n = side.replay_coverage;
    return el("div", { class: "num", data: { side: name } },
      el("span", {}, name.toUpperCase() + " · " + side.path), el("br"),
      el("span", { class: "badge " + verdictClass(side.verdict) }, verdictWord(side.verdict)),
      el("span", {}, n.replays > 0 ? ` ${n.recorded_replays} of ${n.replays} graph replays recorded (${percent(n.coverage)})` : " no graph replays"));
  }
  function rowDeltas(rows, name, mono, id) {
    const flat = rows.map((r) => ({ kernel_id: r.kernel_id, name: r.name, category: r.category, base: r.base.time_us, new: r.new.time_us,
      delta: r.delta_us, relative: r.relative, base_share: r.base.share, new_share: r.new.share }));
    const columns = [{ key: "name", label: name, mono }];
    if (name !== "category") columns.unshift({ key: "kernel_id", label: "id", id: true });
    if (name !== "category") columns.push({ key: "category", label: "category" });
    return table([
      ...columns,
      { key: "base", label: "base", num: true, fmt: micros }, { key: "new", label: "new", num: true, fmt: micros },
      { key: "delta", label: "delta", num: true, fmt: (v) => deltaCell(v) },
      { key: "relative", label: "relative", num: true, fmt: relative },
      { key: "base_share", label: "base share", num: true, fmt: percent },
      { key: "new_share", label: "new share", num: true, fmt: percent },
    ], flat, { name: "diff-" + id, scroll: true });
  }
  function stageDelta(stage) {
    const parts = [el("h3", { data: { stage: stage.stage } }, `${stage.stage}: ${micros(stage.base.time_us)} → ${micros(stage.new.time_us)} (`, deltaCell(stage.delta_us), `, ${relative(stage.relative)})`)];
    if (stage.forced) parts.push(el("p", { class: "refused" }, "FORCED: " + stage.forced_reason));
    parts.push(rowDeltas(stage.categories, "category", false, "categories"), rowDeltas(stage.kernels, "kernel", true, "kernels"));
    if (stage.kernels_left_out) parts.push(note(`${stage.kernels_left_out} more kernels changed less.`));
    for (const [rows, what, left, id] of [[stage.appeared, "appeared (only in NEW)", stage.appeared_left_out, "appeared"], [stage.vanished, "vanished (only in BASE)", stage.vanished_left_out, "vanished"]]) {
      if (!rows.length) continue;
      parts.push(el("h3", {}, `Kernels that ${what}: ${rows.length + left}`), rowDeltas(rows, "kernel", true, id));
    }
    return el("div", { class: "stage-delta" }, parts);
  }
  function comparisonView(comparison) {
    const d = comparison.document;
    const parts = [el("h2", {}, "Comparison: BASE → NEW"), el("div", { class: "nums" }, sideCard("base", d.base), sideCard("new", d.new))];
    for (const u of d.unusable_sides || []) {
      parts.push(el("div", { class: "refused", data: { unusable: u.side } },
        el("b", {}, `${u.side.toUpperCase()} cannot be compared${d.forced ? " (compared anyway: --force)" : ""}`), "\n", u.reason, "\nfix: " + u.fix));
    }
    for (const r of d.refused) {
      parts.push(el("div", { class: "refused", data: { refused: r.stage } },
        el("b", {}, `${r.stage.toUpperCase()} not compared`), "\n", r.sides.map((s) => s.explanation).join("\n"), "\nfix: " + r.fix));
    }
    for (const n of d.notes) parts.push(note(n));
    const stages = d.stages.map((s) => ({ stage: s.stage + (s.forced ? " (forced)" : ""), base: s.base.time_us, new: s.new.time_us,
      delta: s.delta_us, relative: s.relative, base_share: s.base.share, new_share: s.new.share }));
    parts.push(el("h3", {}, "GPU time per stage"), table([
      { key: "stage", label: "stage" },
      { key: "base", label: "base", num: true, fmt: micros }, { key: "new", label: "new", num: true, fmt: micros },
      { key: "delta", label: "delta", num: true, fmt: (v) => deltaCell(v) },
      { key: "relative", label: "relative", num: true, fmt: relative },
      { key: "base_share", label: "base share", num: true, fmt: percent },
      { key: "new_share", label: "new share", num: true, fmt: percent },
    ], stages, { name: "diff-stages" }));
    parts.push(...d.stages.map(stageDelta));
    parts.push(el("details", {}, el("summary", {}, "as the terminal prints it"), el("pre", { class: "verdict", data: { diff: "text" } }, comparison.text)));
    return el("section", { class: "comparison", data: { section: "diff" } }, parts);
  }

  // ---- the page ----------------------------------------------------------------------
  function render() {
    const app = document.getElementById("app");
    app.append(el("h1", {}, DATA.title), el("div", { class: "sub" }, "written by " + DATA.tool + " · opens offline; hover and click the charts"));
    if (DATA.intro) app.append(el("p", { class: "intro" }, DATA.intro));
    const views = DATA.sections.map((s) => [s.label, () => sectionView(s)]);
    if (DATA.comparison) views.push(["comparison", () => comparisonView(DATA.comparison)]);
    const body = el("div");
    // The tab to open: `#N` in the URL (1-based), so a link can point at one.
    const wanted = Number((location.hash.match(/^#(\d+)$/) || [])[1] || 1) - 1;
    const first = wanted >= 0 && wanted < views.length ? wanted : 0;
    if (views.length > 1) {
      const buttons = views.map(([label, make], i) => el("button", {
        data: { tab: String(i + 1) },
        onclick: (event) => {
          for (const b of buttons) b.classList.toggle("on", b === event.currentTarget);
          history.replaceState(null, "", "#" + (i + 1));
          attach(body, make());
        },
      }, label));
      buttons[first].classList.add("on");
      app.append(el("nav", { class: "tabs" }, buttons));
    }
    app.append(body);
    attach(body, views[first][1]());
    document.body.dataset.rendered = "ok";
  }
  window.addEventListener("error", (event) => {
    document.body.dataset.errors = String(Number(document.body.dataset.errors || 0) + 1);
    document.getElementById("app").prepend(el("pre", { class: "verdict bad" }, "report script error: " + event.message));
  });
  render();
})();
