//! Random programs for differential fuzzing, the way Csmith and YARPGen test C compilers: each
//! seed gives a program that checks and binds, whose values stay of order one over any number
//! of steps, and whose every backend and plan must match the reference bitwise in exact mode.
//!
//! A program has a 1D to 3D grid of awkward extents (a quarter of them large enough for GPU
//! blocks away from every edge), one to three fields (`f32`, `f64`, `i32`, `i64`, `u8` and the
//! storage types `f16`/`bf16`), each with a border mode or none, and one to three stages. A stage
//! writes one or two fields from `let`s and expressions that read any field at offsets up to
//! the program's radius (1 or 2), parameters, coordinates and the step counter, through every
//! math function of the language, `select` and `if`. A stage reading a field without a border
//! keeps to a region its reads stay inside (sometimes narrower, sometimes strided), and a
//! stage may override a field's border. A quarter of the programs read an input table (one
//! value per step) at the step or one of the next two. Some programs have an after-step
//! reduction, or an in-stage reduction a later stage reads, and some stop early through
//! `until`. Some end their steps with a scan stage (a prefix sum, maximum or minimum of an
//! expression along one axis, written to a float field), and some record a field at a few
//! points through a receiver. Those two come from a draw of their own, so that adding them
//! left every other part of a seed's program as it was.
//!
//! Every float expression keeps its value in `[-2, 2]` when its operands are (inputs are in
//! `[0.5, 1.5)`): weighted sums whose weights' magnitudes add up to at most 1, bounded
//! functions, halved products and divisions by at least 1, so that no value overflows or
//! becomes NaN however long a program runs; integer ones stay in `-96..=255` (sums and
//! products modulo 97; a `u8` field holds what a negative value wraps to).

use std::fmt::Write;

use tessera_analysis::BoundProgram;
use tessera_runtime::random::SplitMix64;

use crate::corpus::bind_source;

/// A random program and the steps to run it for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RandomProgram {
    /// `random_17` for seed 17.
    pub name: String,
    /// The program's text.
    pub text: String,
    /// Steps to run.
    pub steps: u64,
}

impl RandomProgram {
    /// The program of `seed`.
    pub fn new(seed: u64) -> RandomProgram {
        let name = format!("random_{seed}");
        let mut generator = Generator::new(seed);
        let text = generator.program(&name);
        let steps = generator.rng.next_in(3, 8) as u64;
        RandomProgram { name, text, steps }
    }

    /// The program bound at its extents (panics with the diagnostics and the text if it does
    /// not check or bind: a generator bug).
    pub fn bind(&self) -> BoundProgram {
        bind_source(&self.name, &self.text, &[])
    }
}

/// The seeds a suite of random programs runs: `TESSERA_RANDOM_PROGRAMS` of them (else
/// `default_count`) from `TESSERA_RANDOM_SEED` (else 0). Panics on a value that is not a
/// number, rather than running a campaign other than the one asked for.
pub fn seeds(default_count: u64) -> std::ops::Range<u64> {
    let var = |name: &str| {
        std::env::var(name).ok().map(|v| {
            (v.trim().parse::<u64>())
                .unwrap_or_else(|_| panic!("{name}={v:?} is not a whole number"))
        })
    };
    let first = var("TESSERA_RANDOM_SEED").unwrap_or(0);
    first..first + var("TESSERA_RANDOM_PROGRAMS").unwrap_or(default_count)
}

/// The types a field may have: its element type and the type its arithmetic is done in (an
/// `i64` or `u8` field's reads are converted to `i32`).
const FIELD_TYPES: [(&str, &str); 8] = [
    ("f32", "f32"),
    ("f64", "f64"),
    ("f32", "f32"),
    ("f16", "f32"),
    ("bf16", "f32"),
    ("i32", "i32"),
    ("i64", "i32"),
    ("u8", "i32"),
];

/// A field of the program.
struct FieldDecl {
    name: String,
    /// Its element type.
    storage: &'static str,
    /// The type its reads are in (`f32` for `f16` and `bf16` fields, `i32` for `i64` and `u8`).
    arithmetic: &'static str,
    /// Whether a border mode answers its reads outside the grid.
    bordered: bool,
}

/// The state of one program's generation.
struct Generator {
    rng: SplitMix64,
    dims: usize,
    /// The furthest offset along any axis a read has.
    radius: i64,
    /// The grid's extents.
    extents: Vec<i64>,
    fields: Vec<FieldDecl>,
    /// The float parameters (`f64`).
    params: Vec<String>,
    /// Reductions a stage may read (computed in an earlier stage of the step).
    readable_reductions: Vec<String>,
    /// The input tables (one value per step), with their types.
    tables: Vec<(String, &'static str)>,
    /// Per axis, the furthest offsets below and above the point that a stage being generated
    /// reads fields without a border at.
    reach: Vec<(i64, i64)>,
    /// Whether the stage being generated may read the step counter.
    step_counter: bool,
    /// The draw of the scan stage and the receiver (see [`Generator::with_extra_draw`]).
    extra: SplitMix64,
}

impl Generator {
    fn new(seed: u64) -> Generator {
        let mut rng = SplitMix64::new(seed ^ 0x7E55_E7A0);
        let dims = [1, 2, 2, 2, 3, 3][rng.next_in(0, 6) as usize];
        let radius = rng.next_in(1, 3);
        Generator {
            rng,
            dims,
            radius,
            extents: Vec::new(),
            fields: Vec::new(),
            params: Vec::new(),
            readable_reductions: Vec::new(),
            tables: Vec::new(),
            reach: vec![(0, 0); dims],
            step_counter: false,
            extra: SplitMix64::new(seed ^ 0x5CA1_AB1E),
        }
    }

    /// Whether a draw with probability `p` succeeds.
    fn chance(&mut self, p: f64) -> bool {
        self.rng.next_f64() < p
    }

    /// One of `options`, uniformly.
    fn pick<'a, T>(&mut self, options: &'a [T]) -> &'a T {
        &options[self.rng.next_in(0, options.len() as i64) as usize]
    }

    /// A number in `[lo, hi)` with three decimals.
    fn number(&mut self, lo: f64, hi: f64) -> String {
        format!("{:.3}", lo + (hi - lo) * self.rng.next_f64())
    }

    /// A number in `[lo, hi)` as an operand (parenthesized when negative).
    fn literal(&mut self, lo: f64, hi: f64) -> String {
        let number = self.number(lo, hi);
        match number.starts_with('-') {
            true => format!("({number})"),
            false => number,
        }
    }

    /// The whole program's text.
    fn program(&mut self, name: &str) -> String {
        let mut text = format!("program {name};\n");
        // A quarter of the grids are large enough for blocks away from every edge (the
        // interior frames of the GPU's fused kernels).
        let large = self.chance(0.25);
        self.extents = (0..self.dims)
            .map(|_| match (self.dims, large) {
                (1, _) => self.rng.next_in(7, 64),
                (2, false) => self.rng.next_in(5, 24),
                (2, true) => self.rng.next_in(30, 73),
                (_, false) => self.rng.next_in(5, 12),
                (_, true) => self.rng.next_in(13, 25),
            })
            .collect();
        for (axis, extent) in self.extents.iter().enumerate() {
            writeln!(text, "param N{axis}: i64 = {extent};").unwrap();
        }
        for k in 0..self.rng.next_in(0, 3) {
            let value = self.number(-0.5, 0.5);
            writeln!(text, "param w{k}: f64 = {value};").unwrap();
            self.params.push(format!("w{k}"));
        }
        let grid: Vec<String> = (0..self.dims).map(|a| format!("N{a}")).collect();
        writeln!(text, "grid [{}];", grid.join(", ")).unwrap();
        for k in 0..self.rng.next_in(1, 4) {
            text.push_str(&self.field(k));
        }
        if self.chance(0.25) {
            let ty = *self.pick(&["f32", "f64"]);
            writeln!(text, "table tb: {ty};").unwrap();
            self.tables.push(("tb".to_string(), ty));
        }
        let fields_end = text.len();
        let stages = self.rng.next_in(1, 4);
        for k in 0..stages {
            text.push_str(&self.stage(k, k + 1 == stages));
        }
        let scan = self.with_extra_draw(|g| g.chance(0.15).then(|| g.scan_stage()).flatten());
        text.push_str(&scan.unwrap_or_default());
        let stages_end = text.len();
        if self.chance(0.3) {
            let field = self.rng.next_in(0, self.fields.len() as i64) as usize;
            let op = *self.pick(&["sum", "max", "min"]);
            let every = self.rng.next_in(1, 4);
            let name = &self.fields[field].name;
            writeln!(text, "reduce r_{name} = {op}({name}) every {every};").unwrap();
        }
        if self.chance(0.25) {
            self.add_clock(&mut text, fields_end, stages_end);
        }
        let receiver = self.with_extra_draw(|g| g.chance(0.2).then(|| g.receiver()));
        text.push_str(&receiver.unwrap_or_default());
        text
    }

    /// `make` run on the draw of the scan stage and the receiver: what it takes leaves the
    /// draw of the rest of the program as it was.
    fn with_extra_draw<T>(&mut self, make: impl FnOnce(&mut Generator) -> T) -> T {
        std::mem::swap(&mut self.rng, &mut self.extra);
        let made = make(self);
        std::mem::swap(&mut self.rng, &mut self.extra);
        made
    }

    /// A stage scanning an expression of the fields along one axis into a float field: a
    /// sum of the expression over the axis's extent (so that a line adds up to at most 2),
    /// sometimes exclusive, or a running maximum or minimum. `None` without a float field.
    fn scan_stage(&mut self) -> Option<String> {
        let floats: Vec<usize> = (0..self.fields.len())
            .filter(|&f| self.fields[f].arithmetic != "i32")
            .collect();
        if floats.is_empty() {
            return None;
        }
        let field = *self.pick(&floats);
        self.reach = vec![(0, 0); self.dims];
        self.step_counter = self.chance(0.3);
        let ty = self.fields[field].arithmetic;
        let axis = self.rng.next_in(0, self.dims as i64) as usize;
        let value = self.expression(ty, 2, &[]);
        let (op, value, exclusive) = match self.rng.next_in(0, 3) {
            0 => (
                "sum",
                format!("({value}) / {ty}(N{axis})"),
                self.chance(0.3),
            ),
            1 => ("max", value, false),
            _ => ("min", value, false),
        };
        let name = ["z", "y", "x"][3 - self.dims + axis];
        let exclusive = if exclusive { ", exclusive" } else { "" };
        let mut header = "stage scanned".to_string();
        if let Some(region) = self.region() {
            header.push_str(&format!(" over [{region}]"));
        }
        let field = &self.fields[field].name;
        Some(format!(
            "{header} {{\n    {field} = scan({op}, {value}, {name}{exclusive});\n}}\n"
        ))
    }

    /// A receiver recording a field at one to four points every one to three steps.
    fn receiver(&mut self) -> String {
        let field = self.rng.next_in(0, self.fields.len() as i64) as usize;
        let (rng, extents) = (&mut self.rng, &self.extents);
        let points: Vec<String> = (0..rng.next_in(1, 5))
            .map(|_| {
                let point: Vec<String> = (extents.iter())
                    .map(|&extent| rng.next_in(0, extent).to_string())
                    .collect();
                format!("[{}]", point.join(", "))
            })
            .collect();
        let every = self.rng.next_in(1, 4);
        format!(
            "receiver seen = {} at [{}] every {every};\n",
            self.fields[field].name,
            points.join(", ")
        )
    }

    /// Makes `until` stop the run after a drawn number of steps: a field `clock` that a
    /// stage of its own (first or last) counts up, and a reduction of its largest value that
    /// `until` compares with a bound, evaluated every 1 to 3 steps. Inputs start below 1.5, so
    /// the run stops after about `k` steps (at the first evaluation past them), inside a fused
    /// pass wherever the plan fuses more. `fields_end` and `stages_end` are the text's offsets
    /// after the field declarations and after the stages.
    fn add_clock(&mut self, text: &mut String, fields_end: usize, stages_end: usize) {
        let k = self.rng.next_in(1, 7);
        let every = self.rng.next_in(1, 4);
        let tick = "stage tick {\n    clock = clock + 1.0;\n}\n";
        let first = self.chance(0.5);
        text.insert_str(if first { fields_end } else { stages_end }, tick);
        text.insert_str(fields_end, "field clock: f64;\n");
        writeln!(text, "reduce r_clock = max(clock) every {every};").unwrap();
        writeln!(text, "until r_clock > {}.5;", k + 1).unwrap();
    }

    /// The declaration of field `k`.
    fn field(&mut self, k: i64) -> String {
        let (ty, arithmetic) = *self.pick(&FIELD_TYPES);
        let border = match self.rng.next_in(0, 6) {
            0 => None,
            1 => Some("clamp".to_string()),
            2 => Some("mirror".to_string()),
            3 => Some("periodic".to_string()),
            4 if ty == "u8" => Some(format!("constant({})", self.rng.next_in(0, 10))),
            4 if arithmetic == "i32" => Some(format!("constant({})", self.rng.next_in(-9, 10))),
            4 => Some(format!("constant({})", self.number(-1.0, 1.0))),
            _ => Some((*self.pick(&["clamp", "periodic"])).to_string()),
        };
        let name = format!("F{k}");
        let declaration = match &border {
            Some(b) => format!("field {name}: {ty} border {b};\n"),
            None => format!("field {name}: {ty};\n"),
        };
        self.fields.push(FieldDecl {
            name,
            storage: ty,
            arithmetic,
            bordered: border.is_some(),
        });
        declaration
    }

    /// Stage number `k`; `last` says no later stage could read its reduction.
    fn stage(&mut self, k: i64, last: bool) -> String {
        self.reach = vec![(0, 0); self.dims];
        self.step_counter = self.chance(0.3);
        let written: Vec<usize> = {
            let n = self.fields.len() as i64;
            let first = self.rng.next_in(0, n) as usize;
            let second = self.rng.next_in(0, n) as usize;
            if second != first && self.chance(0.4) {
                vec![first, second]
            } else {
                vec![first]
            }
        };
        // A stage's override makes a border-less field's reads answerable everywhere.
        let mut overridden = Vec::new();
        for f in 0..self.fields.len() {
            if !self.fields[f].bordered && self.chance(0.2) {
                overridden.push(f);
            }
        }
        for &f in &overridden {
            self.fields[f].bordered = true;
        }
        let working = self.fields[written[0]].arithmetic;
        let mut body = String::new();
        let mut locals = Vec::new();
        for l in 0..self.rng.next_in(0, 3) {
            let value = self.expression(working, 2, &locals);
            writeln!(body, "    let v{l} = {value};").unwrap();
            locals.push(format!("v{l}"));
        }
        for &f in &written {
            let ty = self.fields[f].arithmetic;
            let locals_here: Vec<String> = match (working, ty) {
                (from, to) if from == to => locals.clone(),
                ("i32", to) => locals
                    .iter()
                    .map(|l| format!("({to}({l}) * 0.01)"))
                    .collect(),
                (_, "i32") => (locals.iter())
                    .map(|l| format!("i32(floor({l} * 8.0))"))
                    .collect(),
                (_, to) => locals.iter().map(|l| format!("{to}({l})")).collect(),
            };
            let mut value = self.expression(ty, 3, &locals_here);
            if self.fields[f].storage != ty && ty == "i32" {
                // A literal alone would take the field's type (`u8`), which -8 does not fit.
                value = format!("i32({value})");
            }
            writeln!(body, "    {} = {value};", self.fields[f].name).unwrap();
        }
        let reduction = (!last && self.chance(0.15)).then(|| {
            let name = format!("m{k}");
            let value = self.expression(working, 1, &locals);
            writeln!(body, "    reduce {name} = sum(abs({value}));").unwrap();
            name
        });
        let mut header = format!("stage s{k}");
        if let Some(region) = self.region() {
            header.push_str(&format!(" over [{region}]"));
        }
        if !overridden.is_empty() {
            let borders: Vec<String> = (overridden.iter())
                .map(|&f| {
                    let mode = *self.pick(&["clamp", "mirror", "periodic"]);
                    format!("{} = {mode}", self.fields[f].name)
                })
                .collect();
            header.push_str(&format!(" border {}", borders.join(", ")));
        }
        for &f in &overridden {
            self.fields[f].bordered = false;
        }
        self.readable_reductions.extend(reduction);
        format!("{header} {{\n{body}}}\n")
    }

    /// The stage's region: inside the reach of its reads of fields without a border, sometimes
    /// narrower or strided; `None` for the whole grid.
    fn region(&mut self) -> Option<String> {
        let needed = self
            .reach
            .iter()
            .any(|&(below, above)| below > 0 || above > 0);
        if !needed && !self.chance(0.25) {
            return None;
        }
        let ranges: Vec<String> = (0..self.dims)
            .map(|axis| {
                let (below, above) = self.reach[axis];
                // Narrower by a point at either end where the region keeps a point.
                let spare = self.extents[axis] - below - above - 1;
                let lo = below + self.rng.next_in(0, 2).min(spare);
                let hi = above + self.rng.next_in(0, 2).min(spare - (lo - below));
                let stride = match self.chance(0.1) {
                    true => " by 2",
                    false => "",
                };
                format!("{lo}..N{axis} - {hi}{stride}")
            })
            .collect();
        Some(ranges.join(", "))
    }

    /// An expression of type `ty` (`f32` or `f64`: in `[-2, 2]`; `i32`: see
    /// [`Generator::integer_expression`]), nested at most `depth` deep, that may use `locals`
    /// (of type `ty`).
    fn expression(&mut self, ty: &str, depth: u32, locals: &[String]) -> String {
        if depth == 0 || self.chance(0.25) {
            return self.leaf(ty, locals);
        }
        if ty == "i32" {
            return self.integer_expression(depth, locals);
        }
        let d = depth - 1;
        match self.rng.next_in(0, 16) {
            0..=4 => {
                let terms = self.rng.next_in(2, 5);
                let weights = self.weights(terms as usize);
                let parts: Vec<String> = (weights.iter())
                    .map(|w| format!("{w} * {}", self.expression(ty, d, locals)))
                    .collect();
                format!("({})", parts.join(" + "))
            }
            5 => format!("sqrt(abs({}) + 0.25)", self.expression(ty, d, locals)),
            6 => format!("rsqrt(abs({}) + 0.5)", self.expression(ty, d, locals)),
            7 => {
                let f = *self.pick(&["min", "max"]);
                let (a, b) = (
                    self.expression(ty, d, locals),
                    self.expression(ty, d, locals),
                );
                format!("{f}({a}, {b})")
            }
            8 => {
                let (a, b) = (
                    self.expression(ty, d, locals),
                    self.expression(ty, d, locals),
                );
                format!("(0.5 * {a} * {b})")
            }
            9 => {
                let (a, b) = (
                    self.expression(ty, d, locals),
                    self.expression(ty, d, locals),
                );
                format!("({a} / (abs({b}) + 1.0))")
            }
            10 => {
                let f = *self.pick(&["sin", "cos"]);
                format!("{f}({})", self.expression(ty, d, locals))
            }
            11 => match self.chance(0.5) {
                true => format!("exp(-abs({}))", self.expression(ty, d, locals)),
                false => format!("log(abs({}) + 1.0)", self.expression(ty, d, locals)),
            },
            12 => {
                let (a, b) = (
                    self.expression(ty, d, locals),
                    self.expression(ty, d, locals),
                );
                match self.chance(0.5) {
                    true => format!("(0.5 * atan2({a}, {b}))"),
                    false => format!("pow(abs({a}) + 0.5, 0.75)"),
                }
            }
            13 => format!("(floor({} * 4.0) * 0.25)", self.expression(ty, d, locals)),
            14 => {
                let (a, b) = (
                    self.expression(ty, d, locals),
                    self.expression(ty, d, locals),
                );
                let (c, e) = (
                    self.expression(ty, d, locals),
                    self.expression(ty, d, locals),
                );
                let cmp = *self.pick(&["<", "<=", ">", ">=", "==", "!="]);
                match self.chance(0.5) {
                    true => format!("select({a} {cmp} {b}, {c}, {e})"),
                    false => format!("(if {a} {cmp} {b} then {c} else {e})"),
                }
            }
            _ => {
                let a = self.expression(ty, d, locals);
                let axis = *self.pick(&["x", "y", "z"][..self.dims.min(3)]);
                let m = self.rng.next_in(2, 5);
                format!("select({axis} % {m} == 0, {a}, -({a}))")
            }
        }
    }

    /// An `i32` expression in `-96..=255` (its operands are), nested at most `depth` deep:
    /// sums and products wrapped modulo 97, quotients and remainders (by zero included: 0),
    /// `min`, `max`, `abs`, negation and `select`.
    fn integer_expression(&mut self, depth: u32, locals: &[String]) -> String {
        let d = depth - 1;
        let (a, b) = (
            self.expression("i32", d, locals),
            self.expression("i32", d, locals),
        );
        match self.rng.next_in(0, 8) {
            0 => format!("(({a} + {b}) % 97)"),
            1 => format!("(({a} - {b}) % 97)"),
            2 => format!("(({a} * {b}) % 97)"),
            3 => format!("({a} / {b})"),
            4 => format!("({a} % {b})"),
            5 => format!("{}({a}, {b})", self.pick(&["min", "max"])),
            6 => format!("abs(-({a}))"),
            _ => {
                let c = self.expression("i32", d, locals);
                format!("select({a} < {b}, {c}, {a})")
            }
        }
    }

    /// `terms` weights whose magnitudes add up to at most 1.
    fn weights(&mut self, terms: usize) -> Vec<String> {
        let raw: Vec<f64> = (0..terms).map(|_| self.rng.next_f64() - 0.3).collect();
        let total: f64 = raw.iter().map(|w| w.abs()).sum::<f64>().max(1e-3);
        raw.iter()
            .map(|w| format!("{:.3}", (w / total * 0.999 * 1000.0).trunc() / 1000.0))
            .map(|w| {
                if w.starts_with('-') {
                    format!("({w})")
                } else {
                    w
                }
            })
            .collect()
    }

    /// A read, a local, a literal, a parameter, a coordinate, the step counter, an input
    /// table's value at this step or one of the next two, or a reduction of an earlier stage,
    /// as a value of type `ty` in `[-2, 2]`.
    fn leaf(&mut self, ty: &str, locals: &[String]) -> String {
        if ty == "i32" {
            return match self.rng.next_in(0, 8) {
                0..=3 => self.read(ty),
                4 if !locals.is_empty() => self.pick(locals).clone(),
                5 => format!(
                    "i32({} % 7)",
                    self.pick(&["x", "y", "z"][..self.dims.min(3)])
                ),
                6 if self.step_counter => "i32(t % 5)".to_string(),
                _ => self.rng.next_in(-20, 21).to_string(),
            };
        }
        match self.rng.next_in(0, 13) {
            0..=5 => self.read(ty),
            6 | 7 if !locals.is_empty() => self.pick(locals).clone(),
            8 if !self.params.is_empty() => {
                let param = self.pick(&self.params.clone()).clone();
                match ty {
                    "f64" => param,
                    _ => format!("{ty}({param})"),
                }
            }
            9 => {
                let axis = *self.pick(&["x", "y", "z"][..self.dims.min(3)]);
                format!("({ty}({axis} % 5) * 0.25)")
            }
            10 if self.step_counter => format!("({ty}(t % 3) * 0.5)"),
            12 if !self.tables.is_empty() => {
                let (table, _) = self.pick(&self.tables.clone()).clone();
                let ahead = self.rng.next_in(0, 3);
                format!("({ty}({table}[t + {ahead}]) * 0.5)")
            }
            11 if !self.readable_reductions.is_empty() => {
                let r = self.pick(&self.readable_reductions.clone()).clone();
                format!("({ty}(1.0) / ({ty}({r}) + 1.0))")
            }
            _ => self.literal(-1.0, 1.0),
        }
    }

    /// A read of a random field at a random offset, converted to `ty`.
    fn read(&mut self, ty: &str) -> String {
        let f = self.rng.next_in(0, self.fields.len() as i64) as usize;
        let offset: Vec<i64> = (0..self.dims)
            .map(|_| match self.chance(0.5) {
                true => 0,
                false => self.rng.next_in(-self.radius, self.radius + 1),
            })
            .collect();
        if !self.fields[f].bordered {
            for (axis, &o) in offset.iter().enumerate() {
                let (below, above) = &mut self.reach[axis];
                *below = (*below).max(-o);
                *above = (*above).max(o);
            }
        }
        let field = &self.fields[f];
        let offsets: Vec<String> = offset.iter().map(i64::to_string).collect();
        let mut read = format!("{}[{}]", field.name, offsets.join(", "));
        if field.storage != field.arithmetic && field.arithmetic == "i32" {
            read = format!("i32({read})");
        }
        match (field.arithmetic, ty) {
            (from, to) if from == to => read,
            ("i32", to) => format!("({to}({read}) * 0.01)"),
            (_, "i32") => format!("i32(floor({read} * 8.0))"),
            (_, to) => format!("{to}({read})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_seed_gives_a_program_that_binds_and_the_same_one_each_time() {
        for seed in 0..1000 {
            let program = RandomProgram::new(seed);
            assert_eq!(program, RandomProgram::new(seed));
            program.bind();
        }
    }
}
