"""The result of :func:`stepscope.analyze`: the JSON document ``analyze --json`` prints, as
attributes, and the tables ``analyze --parquet`` writes, as Arrow tables."""

from __future__ import annotations

import html
import io
from collections.abc import Iterator
from typing import Any

# The replay counts summed over files for ``Analysis.counts``.
COUNT_KEYS = (
    "replays",
    "recorded_replays",
    "complete_replays",
    "unverified_replays",
    "short_replays",
    "empty_replays",
    "damaged_replays",
)


class Table:
    """One table: ``arrow`` (a ``pyarrow.Table``), ``to_pandas()``, ``to_polars()``."""

    def __init__(self, name: str, parquet: bytes):
        self.name = name
        self._parquet = parquet
        self._arrow: Any = None

    @property
    def arrow(self) -> Any:
        """The table as a ``pyarrow.Table`` (read on first use)."""
        if self._arrow is None:
            import pyarrow.parquet as pq

            self._arrow = pq.read_table(io.BytesIO(self._parquet))
        return self._arrow

    @property
    def num_rows(self) -> int:
        return int(self.arrow.num_rows)

    def __len__(self) -> int:
        return self.num_rows

    @property
    def column_names(self) -> list[str]:
        return list(self.arrow.column_names)

    def to_pandas(self) -> Any:
        """A ``pandas.DataFrame`` (needs pandas)."""
        return self.arrow.to_pandas()

    def to_polars(self) -> Any:
        """A ``polars.DataFrame`` (needs polars)."""
        import polars as pl

        return pl.from_arrow(self.arrow)

    def to_parquet_bytes(self) -> bytes:
        """The table as the Parquet file ``--parquet`` would write."""
        return self._parquet

    def __repr__(self) -> str:
        return f"<stepscope.Table {self.name}: {self.num_rows} rows>"


class Tables:
    """The tables by name, as attributes (``tables.replays``) or items (``tables["replays"]``)."""

    def __init__(self, parquet: dict[str, bytes]):
        self._tables = {name: Table(name, data) for name, data in parquet.items()}

    def __getattr__(self, name: str) -> Table:
        try:
            table: Table = self.__dict__["_tables"][name]
            return table
        except KeyError:
            raise AttributeError(f"no table {name!r}; tables: {', '.join(self.names)}") from None

    def __getitem__(self, name: str) -> Table:
        return self._tables[name]

    def __iter__(self) -> Iterator[Table]:
        return iter(self._tables.values())

    @property
    def names(self) -> list[str]:
        return list(self._tables)

    def __dir__(self) -> list[str]:
        return list(super().__dir__()) + self.names

    def __repr__(self) -> str:
        return f"<stepscope.Tables {', '.join(self.names)}>"


class Analysis:
    """What ``stepscope analyze`` found.

    ``verdict`` (``complete``, ``incomplete``, …: the same word as the command's), ``counts``
    (replays by status, summed over files), ``findings`` and ``advice`` (per file),
    ``files`` and ``document`` (the whole JSON document), ``exit_code`` (what the command
    would exit with), and ``tables`` (Arrow tables, as ``--parquet`` writes them).
    """

    def __init__(self, document: dict[str, Any], tables: dict[str, bytes], exit_code: int):
        self.document = document
        self.tables = Tables(tables)
        self.exit_code = exit_code

    @property
    def verdict(self) -> str:
        value: str = self.document["verdict"]
        return value

    @property
    def files(self) -> list[dict[str, Any]]:
        value: list[dict[str, Any]] = self.document["files"]
        return value

    @property
    def failed_files(self) -> list[dict[str, Any]]:
        value: list[dict[str, Any]] = self.document["failed_files"]
        return value

    @property
    def warnings(self) -> list[str]:
        value: list[str] = self.document["warnings"]
        return value

    @property
    def counts(self) -> dict[str, int]:
        totals = dict.fromkeys(COUNT_KEYS, 0)
        for file in self.files:
            coverage = file["replay_coverage"]
            for key in COUNT_KEYS:
                totals[key] += coverage.get(key) or 0
        return totals

    @property
    def findings(self) -> list[dict[str, Any]]:
        """Every file's findings, each with the file's ``path``."""
        found = []
        for file in self.files:
            for finding in file["replay_coverage"].get("findings") or []:
                found.append({"path": file["path"], **finding})
        return found

    @property
    def advice(self) -> list[dict[str, Any] | None]:
        """Each file's runtime-switch advice (``None`` where there is none)."""
        return [file.get("advice") for file in self.files]

    def stage_shares(self) -> dict[str, dict[str, float]]:
        """Per file path, each stage's share of the file's GPU time."""
        shares = {}
        for file in self.files:
            stages = (file.get("breakdown") or {}).get("stages") or []
            shares[file["path"]] = {s["stage"]: s["share_of_total"] for s in stages}
        return shares

    def __repr__(self) -> str:
        counts = self.counts
        return (
            f"<stepscope.Analysis {self.verdict}: {counts['recorded_replays']} of "
            f"{counts['replays']} replays recorded, {len(self.files)} file(s)>"
        )

    def _repr_html_(self) -> str:
        """The summary a notebook shows: the verdict, replay counts and stage shares."""
        counts = self.counts
        rows = []
        for file in self.files:
            coverage = file["replay_coverage"]
            stages = (file.get("breakdown") or {}).get("stages") or []
            shares = ", ".join(
                f"{html.escape(s['stage'])} {s['share_of_total'] * 100:.1f} %" for s in stages
            )
            replays = coverage.get("replays") or 0
            recorded = (
                f"{coverage.get('recorded_replays') or 0} of {replays}" if replays else "none"
            )
            rows.append(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>".format(
                    html.escape(file["path"]),
                    html.escape(coverage["verdict"]),
                    recorded,
                    shares,
                )
            )
        failed = "".join(
            f"<li>{html.escape(f['path'])}: {html.escape(f['error'])}</li>"
            for f in self.failed_files
        )
        return (
            '<div class="stepscope-analysis">'
            f"<h3>stepscope: {html.escape(self.verdict.upper())}</h3>"
            + _replays_line(counts)
            + "<table><thead><tr><th>file</th><th>verdict</th><th>replays recorded</th>"
            "<th>GPU time by stage</th></tr></thead><tbody>"
            + "".join(rows)
            + "</tbody></table>"
            + (f"<p>Not read:</p><ul>{failed}</ul>" if failed else "")
            + "".join(_missing_and_fix(file) for file in self.files)
            + "</div>"
        )


def _replays_line(counts: dict[str, int]) -> str:
    """``24 of 25 graph replays recorded (…)``, or that there were none to record."""
    if not counts["replays"]:
        return "<p>no graph replays</p>"
    return (
        f"<p>{counts['recorded_replays']} of {counts['replays']} graph replays recorded "
        f"({counts['complete_replays']} complete, {counts['short_replays']} short, "
        f"{counts['empty_replays']} empty)</p>"
    )


def _missing_and_fix(file: dict[str, Any]) -> str:
    """For a file that lost replays: the GPU time they miss (as a range where it is one),
    and the runtime switches that make the profiler record them."""
    coverage = file["replay_coverage"]
    low = coverage.get("missing_gpu_time_low_us") or 0.0
    high = coverage.get("missing_gpu_time_high_us")
    if not low and not high:
        return ""
    share_low = (coverage.get("missing_share_low") or 0.0) * 100
    share_high = (coverage.get("missing_share_high") or 0.0) * 100
    missing = f"{low / 1000:.1f} – {high / 1000:.1f} ms" if high is not None else (
        f"at least {low / 1000:.1f} ms"
    )
    part = (
        f"<p>{html.escape(file['path'])}: the unrecorded replays miss {missing} of GPU time "
        f"({share_low:.1f} – {share_high:.1f} % of the file's)</p>"
    )
    advice = file.get("advice") or {}
    switches = advice.get("switches") or []
    if advice.get("applies") and switches:
        lines = "".join(
            f"<li><code>{html.escape(w['variable'])}={html.escape(w['value'])}</code>: "
            f"{html.escape(w.get('effect') or '')}</li>"
            for w in switches
        )
        reason = html.escape(advice.get("reason") or "")
        part += (
            f"<p>Start the server with these set to record every replay"
            f"{': ' + reason if reason else ''}</p><ul>{lines}</ul>"
        )
    return part


class Diff:
    """What ``stepscope diff`` found: ``document`` (the JSON ``diff --json`` prints),
    ``stages`` (compared stages, each with its per-step change), ``refused`` (stages not
    compared, and why), ``regression_gate`` and ``exit_code``."""

    def __init__(self, document: dict[str, Any], exit_code: int):
        self.document = document
        self.exit_code = exit_code

    @property
    def stages(self) -> list[dict[str, Any]]:
        value: list[dict[str, Any]] = self.document["stages"]
        return value

    @property
    def refused(self) -> list[dict[str, Any]]:
        value: list[dict[str, Any]] = self.document["refused"]
        return value

    @property
    def regression_gate(self) -> dict[str, Any] | None:
        return self.document.get("regression_gate")

    def __repr__(self) -> str:
        return (
            f"<stepscope.Diff {len(self.stages)} stage(s) compared, "
            f"{len(self.refused)} refused, exit {self.exit_code}>"
        )

    def _repr_html_(self) -> str:
        """The summary a notebook shows: each compared stage's GPU time per step before and
        after, with the interval of the change, and each refused stage with its reason."""
        rows = []
        for stage in self.stages:
            per_step = stage.get("per_step") or {}
            low, high = per_step.get("relative_low"), per_step.get("relative_high")
            interval = (
                f"{low * 100:+.1f} … {high * 100:+.1f} %"
                if low is not None and high is not None
                else "too few steps"
            )
            rows.append(
                "<tr><td>{}</td><td>{:.1f}</td><td>{:.1f}</td><td>{:+.1f} %</td>"
                "<td>{}</td></tr>".format(
                    html.escape(stage["stage"]) + (" (forced)" if stage.get("forced") else ""),
                    (per_step.get("base_median_us") or 0.0) / 1000,
                    (per_step.get("new_median_us") or 0.0) / 1000,
                    (per_step.get("relative") or 0.0) * 100,
                    interval,
                )
            )
        refused = "".join(
            f"<li><b>{html.escape(r['stage'])}</b>: {html.escape(r['reason'])}"
            f"{' Fix: ' + html.escape(r['fix']) if r.get('fix') else ''}</li>"
            for r in self.refused
        )
        gate = self.regression_gate
        return (
            '<div class="stepscope-diff">'
            f"<h3>stepscope diff: {len(self.stages)} stage(s) compared, "
            f"{len(self.refused)} refused (exit {self.exit_code})</h3>"
            "<table><thead><tr><th>stage</th><th>base ms/step</th><th>new ms/step</th>"
            "<th>change</th><th>95 % interval</th></tr></thead><tbody>"
            + "".join(rows)
            + "</tbody></table>"
            + (f"<p>Refused (not compared):</p><ul>{refused}</ul>" if refused else "")
            + (
                f"<p>Regression gate: {html.escape(str(gate))}</p>"
                if gate is not None
                else ""
            )
            + "</div>"
        )
