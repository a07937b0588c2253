//! Random valid programs from a seed (names declared before use, one offset per axis, ...).

/// Choices from a seed (the one generator, `tessera_runtime::random`).
pub struct Rng(tessera_runtime::random::SplitMix64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        Rng(tessera_runtime::random::SplitMix64::new(seed))
    }

    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// A value in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// True with probability `percent`%.
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    /// One of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

const AXES: [&str; 4] = ["w", "z", "y", "x"];
const TYPES: [&str; 5] = ["f32", "f64", "i32", "i64", "u8"];

/// What expressions may refer to.
struct Names {
    dims: usize,
    fields: Vec<String>,
    params: Vec<String>,
    locals: Vec<String>,
    reads: bool,
}

fn literal(rng: &mut Rng) -> String {
    match rng.below(6) {
        0 => (rng.next() as i64).to_string(),
        1 => (rng.below(20) as i64 - 5).to_string(),
        2 => {
            let v = f64::from_bits(rng.next());
            if v.is_finite() {
                format!("{v:?}")
            } else {
                "0.5".to_string()
            }
        }
        3 => format!("{:?}", rng.below(1000) as f64 / 8.0 - 20.0),
        4 => ["1e-6", "2.5e3", "0.001", "1e300"][rng.below(4)].to_string(),
        _ => ["true", "false"][rng.below(2)].to_string(),
    }
}

fn leaf(rng: &mut Rng, names: &Names) -> String {
    loop {
        match rng.below(6) {
            0 => return literal(rng),
            1 if names.reads && !names.fields.is_empty() => {
                let field = rng.pick(&names.fields).clone();
                if rng.chance(30) {
                    return field;
                }
                let offsets: Vec<String> = (0..names.dims)
                    .map(|_| (rng.below(7) as i64 - 3).to_string())
                    .collect();
                return format!("{field}[{}]", offsets.join(", "));
            }
            2 if !names.params.is_empty() => return rng.pick(&names.params).clone(),
            3 => return AXES[4 - names.dims + rng.below(names.dims)].to_string(),
            4 if names.reads => return "t".to_string(),
            5 if !names.locals.is_empty() => return rng.pick(&names.locals).clone(),
            _ => {}
        }
    }
}

fn expr(rng: &mut Rng, names: &Names, depth: usize) -> String {
    if depth == 0 || rng.chance(25) {
        return leaf(rng, names);
    }
    let sub = |rng: &mut Rng| expr(rng, names, depth - 1);
    match rng.below(9) {
        0 | 1 => {
            let op = rng.pick(&[
                "+", "-", "*", "/", "%", "<", "<=", ">", ">=", "==", "!=", "&&", "||",
            ]);
            format!("({} {op} {})", sub(rng), sub(rng))
        }
        2 => format!(
            "{} {} {}",
            sub(rng),
            rng.pick(&["+", "-", "*", "/"]),
            sub(rng)
        ),
        3 => format!("{}{}", rng.pick(&["-", "!", "- "]), sub(rng)),
        4 => format!("(if {} then {} else {})", sub(rng), sub(rng), sub(rng)),
        5 => format!("({} ? {} : {})", sub(rng), sub(rng), sub(rng)),
        6 => format!("select({}, {}, {})", sub(rng), sub(rng), sub(rng)),
        7 => {
            let f = rng.pick(&[
                "sqrt", "rsqrt", "exp", "log", "pow", "sin", "cos", "atan2", "abs", "min", "max",
                "floor",
            ]);
            if ["pow", "atan2", "min", "max"].contains(f) {
                format!("{f}({}, {})", sub(rng), sub(rng))
            } else {
                format!("{f}({})", sub(rng))
            }
        }
        _ => format!("{}({})", rng.pick(&TYPES), sub(rng)),
    }
}

fn size(rng: &mut Rng, params: &[String]) -> String {
    match rng.below(7) {
        4 => format!("-({})", rng.below(3)),
        5 => format!("(-{})", rng.below(3)),
        6 => format!("-(-{} * {})", rng.below(3), rng.pick(params)),
        0 => rng.below(50).to_string(),
        1 => rng.pick(params).clone(),
        2 => format!(
            "{} {} {}",
            rng.pick(params),
            rng.pick(&["+", "-", "*", "/"]),
            rng.below(9) + 1
        ),
        _ => format!("-{}", rng.below(9)),
    }
}

fn region(rng: &mut Rng, dims: usize, params: &[String]) -> String {
    let ranges: Vec<String> = (0..dims)
        .map(|_| {
            let mut r = match rng.below(6) {
                0 => "all".to_string(),
                1 => "..".to_string(),
                2 => format!("{}..", size(rng, params)),
                3 => format!("..{}", size(rng, params)),
                4 => format!("{}..{}", size(rng, params), size(rng, params)),
                _ => return size(rng, params),
            };
            if rng.chance(20) {
                r.push_str(&format!(" by {}", rng.below(4) + 1));
            }
            r
        })
        .collect();
    format!("[{}]", ranges.join(", "))
}

fn border(rng: &mut Rng) -> String {
    match rng.below(4) {
        0 => format!("constant({})", literal(rng)),
        1 => "clamp".to_string(),
        2 => "periodic".to_string(),
        _ => "mirror".to_string(),
    }
}

/// A random program that parses (it need not type-check).
pub fn program(seed: u64) -> String {
    let rng = &mut Rng::new(seed);
    let mut out = String::new();
    if rng.chance(50) {
        out.push_str("program random;\n");
    }
    let dims = 1 + rng.below(4);
    let params: Vec<String> = (0..1 + rng.below(3)).map(|i| format!("P{i}")).collect();
    for p in &params {
        out.push_str(&format!(
            "param {p}: {} = {};\n",
            rng.pick(&["i64", "i32"]),
            rng.below(40) as i64 - 3
        ));
    }
    let mut value_params = params.clone();
    if rng.chance(50) {
        out.push_str(&format!("param alpha: f64 = {};\n", literal(rng)));
        value_params.push("alpha".to_string());
    }
    if rng.chance(40) {
        out.push_str("type real = f32;\n");
    }
    let extents: Vec<String> = (0..dims).map(|_| size(rng, &params)).collect();
    out.push_str(&format!("grid [{}];\n", extents.join(", ")));
    if rng.chance(40) {
        out.push_str(&format!("steps {};\n", rng.below(1000)));
    }
    let mut fields = Vec::new();
    let init_names = Names {
        dims,
        fields: Vec::new(),
        params: value_params.clone(),
        locals: Vec::new(),
        reads: false,
    };
    for i in 0..1 + rng.below(4) {
        let mut attrs = String::new();
        if rng.chance(20) {
            attrs.push_str(" readonly");
        }
        if rng.chance(50) {
            attrs.push_str(&format!(" border {}", border(rng)));
        }
        if rng.chance(30) {
            attrs.push_str(&format!(" = {}", expr(rng, &init_names, 2)));
        }
        match rng.below(5) {
            0 => {
                out.push_str(&format!(
                    "field S{i}: {{a: f32{attrs}, b: {}}};\n",
                    rng.pick(&TYPES)
                ));
                fields.push(format!("S{i}.a"));
                fields.push(format!("S{i}.b"));
            }
            1 => {
                let width = 2 + rng.below(3);
                out.push_str(&format!(
                    "field V{i}: {}x{width}{attrs};\n",
                    rng.pick(&TYPES)
                ));
                fields.extend(
                    ["x", "y", "z", "w"][..width]
                        .iter()
                        .map(|c| format!("V{i}.{c}")),
                );
            }
            _ => {
                let ty = if out.contains("type real") && rng.chance(30) {
                    "real"
                } else {
                    rng.pick(&TYPES)
                };
                out.push_str(&format!("field f{i}: {ty}{attrs};\n"));
                fields.push(format!("f{i}"));
            }
        }
    }
    let mut reductions = Vec::new();
    for s in 0..1 + rng.below(3) {
        out.push_str(&format!("stage s{s}"));
        if rng.chance(50) {
            out.push_str(&format!(" over {}", region(rng, dims, &params)));
        }
        if rng.chance(30) {
            out.push_str(&format!(" border {} = {}", rng.pick(&fields), border(rng)));
        }
        out.push_str(" {\n");
        let mut names = Names {
            dims,
            fields: fields.clone(),
            params: value_params.clone(),
            locals: Vec::new(),
            reads: true,
        };
        for k in 0..1 + rng.below(5) {
            match rng.below(4) {
                0 => {
                    let value = expr(rng, &names, 3);
                    out.push_str(&format!("    let l{k} = {value};\n"));
                    names.locals.push(format!("l{k}"));
                }
                1 if reductions.len() < 4 => {
                    let name = format!("r{}", reductions.len());
                    let every = if rng.chance(50) {
                        format!(" every {}", rng.below(5) + 1)
                    } else {
                        String::new()
                    };
                    out.push_str(&format!(
                        "    reduce {name} = {}({}){every};\n",
                        rng.pick(&["sum", "max", "min"]),
                        expr(rng, &names, 2)
                    ));
                    reductions.push(name);
                }
                _ => {
                    let op = rng.pick(&["=", "=", "+=", "-=", "*=", "/="]);
                    out.push_str(&format!(
                        "    {} {op} {};\n",
                        rng.pick(&fields),
                        expr(rng, &names, 3)
                    ));
                }
            }
        }
        out.push_str("}\n");
    }
    for _ in 0..rng.below(3) {
        let name = format!("r{}", reductions.len());
        let names = Names {
            dims,
            fields: fields.clone(),
            params: value_params.clone(),
            locals: Vec::new(),
            reads: true,
        };
        let mut text = format!(
            "reduce {name} = {}({})",
            rng.pick(&["sum", "max", "min"]),
            expr(rng, &names, 2)
        );
        if rng.chance(40) {
            text.push_str(&format!(" over {}", region(rng, dims, &params)));
        }
        if rng.chance(40) {
            text.push_str(&format!(" every {}", rng.below(10) + 1));
        }
        out.push_str(&format!("{text};\n"));
        reductions.push(name);
    }
    if !reductions.is_empty() && rng.chance(60) {
        let r = rng.pick(&reductions).clone();
        let extra = if rng.chance(50) {
            format!(" || {} > {}", rng.pick(&reductions), literal(rng))
        } else {
            String::new()
        };
        out.push_str(&format!("until {r} < 1e-3{extra};\n"));
    }
    out
}
