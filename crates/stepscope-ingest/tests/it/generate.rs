//! Random but valid Kineto documents, and what a correct reader must find in them.
//!
//! A [`Doc`] is a list of [`Event`]s plus how to write them: object or bare-array form,
//! a whitespace [`Layout`], a byte-order mark, and a seed that picks string escapes, key
//! order, number spellings and ragged whitespace. Rendering is deterministic.

use proptest::prelude::*;
use stepscope_model::Trace;

/// The event kinds generated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Kernel,
    Runtime,
    Annotation,
    CpuOp,
    Flow,
    /// A Python function (only counted), written as Kineto writes them: keys in one order,
    /// unescaped, so that many look alike (as the reader's learned shapes expect).
    Python,
}

/// One generated event.
#[derive(Debug, Clone)]
pub struct Event {
    pub kind: Kind,
    pub name: String,
    pub pid: i64,
    pub tid: i64,
    /// Start, nanoseconds (written as microseconds).
    pub ts: i64,
    /// Length, nanoseconds.
    pub dur: i64,
    /// `args.correlation`, or the flow id.
    pub correlation: i64,
    /// Numbers written as strings (`"ts": "12.5"`).
    pub quoted: bool,
    /// Objects in an `args` array (`"x": [{"a":1}, {"b":2}]`), which look like event starts.
    pub inner_objects: usize,
}

/// How tokens are separated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `},{` and no spaces.
    Compact,
    /// `}, {` and a space after `:` and `,`.
    Spaced,
    /// One event per line, `},\n  {`.
    Pretty,
    /// Random JSON whitespace between every token.
    Ragged,
}

/// A generated document.
#[derive(Debug, Clone)]
pub struct Doc {
    pub events: Vec<Event>,
    /// `{"traceEvents": [...]}` with header keys, else a bare `[...]`.
    pub object_form: bool,
    pub layout: Layout,
    pub bom: bool,
    pub seed: u64,
}

/// Device names written in the object form's `deviceProperties`.
pub const DEVICE_NAMES: [&str; 2] = ["GPU é \"0\"", "GPU 1"];

/// Splitmix64: a tiny deterministic generator for rendering choices.
#[derive(Debug)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, one_in: u64) -> bool {
        self.below(one_in) == 0
    }
}

struct Writer {
    out: Vec<u8>,
    rng: Rng,
    layout: Layout,
}

impl Writer {
    fn text(&mut self, s: &str) {
        self.out.extend_from_slice(s.as_bytes());
    }

    /// Whitespace between two tokens inside an event or header.
    fn gap(&mut self) {
        const RAGGED: [&str; 7] = ["", "", " ", "\n", "\t", "\r\n", " \n\t  "];
        match self.layout {
            Layout::Compact | Layout::Pretty => {}
            Layout::Spaced => self.text(" "),
            Layout::Ragged => {
                let pick = RAGGED[self.rng.below(RAGGED.len() as u64) as usize];
                self.text(pick);
            }
        }
    }

    /// The separator between two events of `traceEvents`.
    fn event_separator(&mut self) {
        match self.layout {
            Layout::Compact => self.text(","),
            Layout::Spaced => self.text(", "),
            Layout::Pretty => self.text(",\n  "),
            Layout::Ragged => {
                self.gap();
                self.text(",");
                self.gap();
            }
        }
    }

    fn string(&mut self, s: &str) {
        self.text("\"");
        for c in s.chars() {
            let escape = self.rng.chance(4);
            self.char_in_string(c, escape);
        }
        self.text("\"");
    }

    fn char_in_string(&mut self, c: char, escape: bool) {
        match c {
            '"' if !escape => self.text("\\\""),
            '\\' if !escape => self.text("\\\\"),
            '\n' if !escape => self.text("\\n"),
            '\t' if !escape => self.text("\\t"),
            '\r' if !escape => self.text("\\r"),
            '\u{8}' if !escape => self.text("\\b"),
            '\u{c}' if !escape => self.text("\\f"),
            '/' if escape => self.text("\\/"),
            c if escape || (c as u32) < 0x20 || c == '"' || c == '\\' => {
                let upper = self.rng.chance(2);
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let hex = if upper {
                        format!("\\u{unit:04X}")
                    } else {
                        format!("\\u{unit:04x}")
                    };
                    self.text(&hex);
                }
            }
            c => {
                let mut buffer = [0u8; 4];
                self.text(c.encode_utf8(&mut buffer));
            }
        }
    }

    fn integer(&mut self, value: i64, quoted: bool) {
        let text = if quoted {
            format!("\"{value}\"")
        } else {
            value.to_string()
        };
        self.text(&text);
    }

    /// Nanoseconds written as microseconds: `12`, `12.500` or `12.5`, maybe quoted.
    fn micros(&mut self, nanos: i64, quoted: bool) {
        let (whole, fraction) = (nanos / 1000, nanos % 1000);
        let mut text = if fraction == 0 && self.rng.chance(2) {
            whole.to_string()
        } else {
            format!("{whole}.{fraction:03}")
        };
        if text.contains('.') && self.rng.chance(2) {
            text = text.trim_end_matches('0').trim_end_matches('.').to_owned();
        }
        if quoted {
            text = format!("\"{text}\"");
        }
        self.text(&text);
    }

    /// `{ "k": v, ... }` with the fields in a random order.
    fn object(&mut self, mut fields: Vec<(&str, Value<'_>)>) {
        for i in (1..fields.len()).rev() {
            let j = self.rng.below(i as u64 + 1) as usize;
            fields.swap(i, j);
        }
        self.object_as_is(fields, false);
    }

    /// `{ "k": v, ... }` with the fields in the order given; keys unescaped when `plain`.
    fn object_as_is(&mut self, fields: Vec<(&str, Value<'_>)>, plain: bool) {
        self.text("{");
        for (index, (key, value)) in fields.into_iter().enumerate() {
            if index > 0 {
                self.gap();
                self.text(",");
            }
            self.gap();
            if plain {
                self.text(&json_string(key));
            } else {
                self.string(key);
            }
            self.gap();
            self.text(":");
            self.gap();
            self.value(value);
        }
        self.gap();
        self.text("}");
    }

    fn value(&mut self, value: Value<'_>) {
        match value {
            Value::Str(s) => self.string(s),
            Value::Int(v, quoted) => self.integer(v, quoted),
            Value::Micros(v, quoted) => self.micros(v, quoted),
            Value::Raw(text) => self.text(text),
            Value::InnerObjects(n) => self.inner_objects(n),
            Value::Object(fields) => self.object(fields),
            Value::Plain(fields) => self.object_as_is(fields, true),
        }
    }

    /// `[{"a":0}, {"b":1}, ...]`: commas and braces that look like event boundaries.
    fn inner_objects(&mut self, n: usize) {
        self.text("[");
        for i in 0..n {
            if i > 0 {
                self.event_separator();
            }
            let key = if i % 2 == 0 { "a" } else { "b" };
            self.object(vec![(key, Value::Int(i as i64, false))]);
        }
        self.text("]");
    }
}

/// A JSON value to write.
enum Value<'a> {
    Str(&'a str),
    Int(i64, bool),
    Micros(i64, bool),
    Raw(&'static str),
    InnerObjects(usize),
    Object(Vec<(&'a str, Value<'a>)>),
    /// An object in the order given, keys unescaped.
    Plain(Vec<(&'a str, Value<'a>)>),
}

impl Event {
    fn fields(&self) -> Vec<(&str, Value<'_>)> {
        let q = self.quoted;
        let (phase, category) = match self.kind {
            Kind::Kernel => ("X", "kernel"),
            Kind::Runtime => ("X", "cuda_runtime"),
            Kind::Annotation => ("X", "user_annotation"),
            Kind::CpuOp => ("X", "cpu_op"),
            Kind::Flow if self.correlation % 2 == 0 => ("s", "ac2g"),
            Kind::Flow => ("f", "ac2g"),
            Kind::Python => ("X", "python_function"),
        };
        let mut fields = vec![
            ("ph", Value::Str(phase)),
            ("cat", Value::Str(category)),
            ("name", Value::Str(&self.name)),
            ("pid", Value::Int(self.pid, q)),
            ("tid", Value::Int(self.tid, q)),
            ("ts", Value::Micros(self.ts, q)),
        ];
        if self.kind == Kind::Flow {
            fields.push(("id", Value::Int(self.correlation, q)));
            fields.push(("bp", Value::Str("e")));
            return fields;
        }
        fields.push(("dur", Value::Micros(self.dur, q)));
        if self.kind == Kind::Python {
            let args = vec![
                ("Python parent id", Value::Int(self.correlation, q)),
                ("Python id", Value::Int(self.correlation + 1, q)),
                ("Ev Idx", Value::Int(self.tid, false)),
            ];
            fields.push(("args", Value::Plain(args)));
            return fields;
        }
        let mut args = vec![
            ("correlation", Value::Int(self.correlation, q)),
            ("x", Value::InnerObjects(self.inner_objects)),
        ];
        match self.kind {
            Kind::Kernel => {
                args.push(("device", Value::Int(self.pid, q)));
                args.push(("stream", Value::Int(self.tid % 64, q)));
                args.push(("grid", Value::Raw("[1, 2, 3]")));
                args.push(("est. achieved occupancy %", Value::Raw("0.125")));
                args.push(("blocks per SM", Value::Raw("-1.5e-3")));
            }
            Kind::CpuOp => args.push(("Input Dims", Value::Raw("[[1,2],[3],[]]"))),
            _ => args.push(("External id", Value::Int(self.correlation + 1, false))),
        }
        fields.push(("args", Value::Object(args)));
        fields
    }
}

impl Doc {
    /// The document as JSON text.
    pub fn render(&self) -> Vec<u8> {
        let mut w = Writer {
            out: Vec::with_capacity(self.events.len() * 200 + 256),
            rng: Rng(self.seed),
            layout: self.layout,
        };
        if self.bom {
            w.out.extend_from_slice(b"\xEF\xBB\xBF");
        }
        w.gap();
        if self.object_form {
            w.text("{");
            w.gap();
            // Header keys unescaped: the format sniffer looks for them verbatim.
            w.text("\"schemaVersion\":1,");
            w.gap();
            w.text("\"deviceProperties\":");
            let devices = DEVICE_NAMES
                .iter()
                .enumerate()
                .map(|(i, name)| format!("{{\"id\":{i},\"name\":{}}}", json_string(name)))
                .collect::<Vec<_>>()
                .join(", ");
            w.text(&format!("[{devices}],"));
            w.gap();
            w.text("\"traceEvents\"");
            w.gap();
            w.text(":");
            w.gap();
        }
        self.render_events(&mut w);
        if self.object_form {
            w.text(",");
            w.gap();
            w.text(r#""traceName": "gen", "distributedInfo": {"rank": 3, "world_size": 8}"#);
            w.gap();
            w.text("}");
        }
        w.gap();
        w.out
    }

    fn render_events(&self, w: &mut Writer) {
        w.text("[");
        if w.layout == Layout::Pretty {
            w.text("\n  ");
        }
        for (index, event) in self.events.iter().enumerate() {
            if index > 0 {
                w.event_separator();
            }
            match event.kind {
                Kind::Python => w.object_as_is(event.fields(), true),
                _ => w.object(event.fields()),
            }
        }
        if w.layout == Layout::Pretty {
            w.text("\n");
        }
        w.text("]");
    }

    /// Repeats the events, each copy later in time, until the document is `min_bytes` long.
    pub fn tile_to(&mut self, min_bytes: usize) {
        let len = self.render().len().max(1);
        let mut copies = min_bytes.div_ceil(len) + 1;
        let template = std::mem::take(&mut self.events);
        // The estimate counts the header with every copy; a large header and few events
        // fall short of `min_bytes`, so grow until the rendered document is big enough.
        loop {
            // Small shifts keep every start exact when written as a float of microseconds.
            self.events = (0..copies as i64)
                .flat_map(|copy| {
                    template.iter().map(move |e| Event {
                        ts: e.ts + copy * 7,
                        ..e.clone()
                    })
                })
                .collect();
            if self.render().len() >= min_bytes {
                return;
            }
            copies *= 2;
        }
    }

    /// What a correct reader finds in the document.
    pub fn expected(&self) -> Expected {
        let of = |kind: Kind| self.events.iter().filter(move |e| e.kind == kind);
        let spans = |kind: Kind| {
            of(kind)
                .map(|e| (e.name.clone(), e.ts, e.dur, e.correlation as u64))
                .collect()
        };
        Expected {
            events: self.events.len() as u64,
            kernels: spans(Kind::Kernel),
            runtime: spans(Kind::Runtime),
            annotations: spans(Kind::Annotation),
            cpu_ops: of(Kind::CpuOp).count() as u64,
            flows: of(Kind::Flow).map(|e| e.correlation as u64).collect(),
            object_form: self.object_form,
        }
    }
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

/// (name, start ns, duration ns, correlation)
pub type Span = (String, i64, i64, u64);

/// What a correct reader finds in a generated document.
#[derive(Debug)]
pub struct Expected {
    pub events: u64,
    pub kernels: Vec<Span>,
    pub runtime: Vec<Span>,
    pub annotations: Vec<Span>,
    pub cpu_ops: u64,
    pub flows: Vec<u64>,
    pub object_form: bool,
}

/// The kernels of a trace as [`Span`]s.
pub fn kernel_spans(trace: &Trace) -> Vec<Span> {
    let gpu = &trace.gpu;
    (0..gpu.len())
        .map(|i| {
            (
                trace.name(gpu.name[i]).to_owned(),
                gpu.start[i].as_nanos(),
                gpu.duration[i].as_nanos(),
                gpu.correlation[i].0,
            )
        })
        .collect()
}

fn runtime_spans(trace: &Trace) -> Vec<Span> {
    let rt = &trace.runtime;
    (0..rt.len())
        .map(|i| {
            (
                trace.name(rt.name[i]).to_owned(),
                rt.start[i].as_nanos(),
                rt.duration[i].as_nanos(),
                rt.correlation[i].0,
            )
        })
        .collect()
}

fn annotation_spans(trace: &Trace) -> Vec<Span> {
    let an = &trace.annotations;
    (0..an.len())
        .map(|i| {
            (
                trace.name(an.name[i]).to_owned(),
                an.start[i].as_nanos(),
                an.duration[i].as_nanos(),
                0,
            )
        })
        .collect()
}

fn same<T: PartialEq + std::fmt::Debug>(what: &str, got: &T, want: &T) -> Result<(), String> {
    if got == want {
        Ok(())
    } else {
        Err(format!("{what}: got {got:?}, want {want:?}"))
    }
}

impl Expected {
    /// Checks a trace read from the document.
    pub fn check(&self, trace: &Trace) -> Result<(), String> {
        same("events", &trace.counts.events, &self.events)?;
        same("cpu ops", &trace.counts.cpu_ops, &self.cpu_ops)?;
        same("kernels", &kernel_spans(trace), &self.kernels)?;
        same("runtime", &runtime_spans(trace), &self.runtime)?;
        let annotations: Vec<Span> = self
            .annotations
            .iter()
            .map(|(n, s, d, _)| (n.clone(), *s, *d, 0))
            .collect();
        same("annotations", &annotation_spans(trace), &annotations)?;
        same("flows", &trace.flows.id, &self.flows)?;
        same("truncated", &trace.stats.truncated_at_byte, &None)?;
        same("unknown fields", &trace.stats.unknown_fields.len(), &0)?;
        if self.object_form {
            let names: Vec<String> = DEVICE_NAMES.iter().map(|s| (*s).to_owned()).collect();
            same("device names", &trace.metadata.device_names, &names)?;
            same("rank", &trace.metadata.rank, &Some(3))?;
            same("schema", &trace.metadata.schema_version, &Some(1))?;
        }
        Ok(())
    }
}

/// Event names: plain words, JSON specials, control characters, non-ASCII, and pieces
/// of JSON that look like event boundaries.
pub fn name() -> impl Strategy<Value = String> {
    let special = prop::sample::select(vec![
        "\"",
        "\\",
        "/",
        "\n",
        "\t",
        "\u{1}",
        "\u{1f}",
        "é",
        "漢字",
        "🚀",
        "\u{2028}",
        "}, {",
        "},{}",
        "\"},{\"ph\":\"X\"}",
        "]",
        "\\u0041",
    ])
    .prop_map(str::to_owned);
    let piece = prop_oneof![
        6 => "[a-zA-Z0-9_:<>(). -]{1,12}",
        2 => special,
        1 => any::<char>().prop_map(String::from),
    ];
    prop::collection::vec(piece, 0..5).prop_map(|pieces| pieces.concat())
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        4 => Just(Kind::Kernel),
        3 => Just(Kind::Runtime),
        1 => Just(Kind::Annotation),
        2 => Just(Kind::CpuOp),
        1 => Just(Kind::Flow),
        4 => Just(Kind::Python),
    ]
}

/// One event; `inner` bounds the objects in its `args` array.
pub fn event(inner: std::ops::Range<usize>) -> impl Strategy<Value = Event> {
    (
        kind(),
        name(),
        0i64..4,
        0i64..100_000,
        0i64..1_000_000_000_000,
        0i64..10_000_000,
        0i64..1_000_000_000,
        prop::bool::weighted(0.25),
        inner,
    )
        .prop_map(
            |(kind, name, pid, tid, ts, dur, correlation, quoted, inner_objects)| Event {
                kind,
                name,
                pid,
                tid,
                ts,
                dur,
                correlation,
                quoted,
                inner_objects,
            },
        )
}

/// A layout.
pub fn layout() -> impl Strategy<Value = Layout> {
    prop_oneof![
        Just(Layout::Compact),
        Just(Layout::Spaced),
        Just(Layout::Pretty),
        Just(Layout::Ragged),
    ]
}

/// A document whose events come from `events`.
pub fn doc(events: impl Strategy<Value = Vec<Event>>) -> impl Strategy<Value = Doc> {
    (
        events,
        any::<bool>(),
        layout(),
        prop::bool::weighted(0.125),
        any::<u64>(),
    )
        .prop_map(|(events, object_form, layout, bom, seed)| Doc {
            events,
            object_form,
            layout,
            bom,
            seed,
        })
}

/// A small document: up to 40 events.
pub fn small_doc() -> impl Strategy<Value = Doc> {
    doc(prop::collection::vec(event(0..4), 0..40))
}

/// A document of at least `min_bytes`: a random template of events, tiled.
pub fn big_doc(min_bytes: usize) -> impl Strategy<Value = Doc> {
    doc(prop::collection::vec(event(0..40), 1..60)).prop_map(move |mut doc| {
        doc.tile_to(min_bytes);
        doc
    })
}
