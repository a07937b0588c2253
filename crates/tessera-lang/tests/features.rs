//! One parse test per language feature, on the programs in `tests/programs/`.

mod common;

use std::sync::Arc;

use common::{all_sources, is_all, parse_ok, source};
use tessera_ir::{
    BinaryOp, Border, Constant, ExprId, ExprKind, MathFn, Program, Range, ReceiverPoints, ReduceOp,
    ReductionPlacement, ScalarType, SizeExpr, SizeOp, Statement, UnaryOp,
};

fn program(name: &str) -> Program {
    parse_ok(&source(name))
}

fn kind(p: &Program, id: ExprId) -> &ExprKind {
    &p.exprs[id].kind
}

/// The value of the `index`-th statement of stage `stage`.
fn statement_value(p: &Program, stage: usize, index: usize) -> ExprId {
    match &p.stages.values().nth(stage).unwrap().body[index] {
        Statement::Let { value, .. } | Statement::Assign { value, .. } => *value,
    }
}

fn reads(p: &Program, root: ExprId) -> Vec<(String, Vec<i32>)> {
    let mut out = Vec::new();
    tessera_analysis::check::visit(p, root, &mut |e| {
        if let ExprKind::Read { field, offset } = &e.kind {
            out.push((p.fields[*field].name.clone(), offset.clone()));
        }
    });
    out
}

#[test]
fn every_program_checks_and_binds_with_defaults() {
    for (name, text) in all_sources() {
        let checked = common::check(&text, &name).unwrap_or_else(|d| {
            panic!("{name}:\n{}", tessera_lang::render(&d, &name, &text, false))
        });
        if let Err(d) = tessera_analysis::bind(Arc::new(checked), &[]) {
            panic!("{name}:\n{}", tessera_lang::render(&d, &name, &text, false));
        }
    }
}

#[test]
fn program_name_defaults_to_the_given_name_or_the_declaration() {
    let parsed = tessera_lang::parse("grid [4];", "stem", &[]).unwrap();
    assert_eq!(parsed.program.name, "stem");
    let parsed = tessera_lang::parse("program heat; grid [4];", "stem", &[]).unwrap();
    assert_eq!(parsed.program.name, "heat");
}

#[test]
fn grids_of_one_to_four_axes() {
    let p = program("grid_1d");
    assert_eq!(p.extents, vec![SizeExpr::Const(64)]);
    assert_eq!(
        reads(&p, statement_value(&p, 0, 0))
            .iter()
            .map(|r| r.1[0])
            .collect::<Vec<_>>(),
        vec![-1, 0, 1]
    );
    let p = program("grid_2d");
    let (ny, nx) = (
        p.param_by_name("NY").unwrap(),
        p.param_by_name("NX").unwrap(),
    );
    assert_eq!(p.extents, vec![SizeExpr::Param(ny), SizeExpr::Param(nx)]);
    let p = program("grid_3d");
    let n = p.param_by_name("N").unwrap();
    assert_eq!(
        p.extents[1],
        SizeExpr::Binary(
            SizeOp::Add,
            Box::new(SizeExpr::Param(n)),
            Box::new(SizeExpr::Const(2))
        )
    );
    assert_eq!(
        p.extents[2],
        SizeExpr::Binary(
            SizeOp::Mul,
            Box::new(SizeExpr::Const(2)),
            Box::new(SizeExpr::Param(n))
        )
    );
    assert_eq!(reads(&p, statement_value(&p, 0, 0))[3].1, vec![1, 1, 1]);
    let p = program("grid_4d");
    assert_eq!(p.dims(), 4);
    assert_eq!(reads(&p, statement_value(&p, 0, 0))[1].1, vec![0, 0, 0, -1]);
    assert_eq!(p.grid_span.range(), 0.."grid [3, 4, 5, 6]".len());
}

#[test]
fn params_with_types_and_defaults() {
    let p = program("params");
    let expect = [
        ("N", ScalarType::I64, Constant::Int(256)),
        ("M", ScalarType::I32, Constant::Int(-3)),
        ("alpha", ScalarType::F32, Constant::Float(0.1)),
        ("beta", ScalarType::F64, Constant::Float(-2.5e-3)),
        ("level", ScalarType::U8, Constant::Int(200)),
        ("on", ScalarType::Bool, Constant::Bool(true)),
        ("big", ScalarType::F64, Constant::Float(1e300)),
    ];
    let got: Vec<_> = p
        .params
        .values()
        .map(|q| (q.name.as_str(), q.ty, q.default))
        .collect();
    assert_eq!(got, expect);
    let text = source("params");
    let alpha = &p.params[p.param_by_name("alpha").unwrap()];
    assert_eq!(&text[alpha.span.range()], "alpha: f32 = 0.1");
}

#[test]
fn type_aliases_and_overrides() {
    let p = program("type_alias");
    assert!(
        p.fields
            .values()
            .all(|f| f.name == "v.b" || f.ty == ScalarType::F32)
    );
    assert_eq!(p.params.values().next().unwrap().ty, ScalarType::F32);
    let sets = vec![
        ("real".to_string(), "f64".to_string()),
        ("N".to_string(), "10".to_string()),
    ];
    let parsed = tessera_lang::parse(&source("type_alias"), "t", &sets).unwrap();
    assert_eq!(parsed.type_overrides_used, vec!["real".to_string()]);
    let types: Vec<_> = parsed
        .program
        .fields
        .values()
        .map(|f| (f.name.as_str(), f.ty))
        .collect();
    assert_eq!(
        types,
        vec![
            ("u", ScalarType::F64),
            ("v.a", ScalarType::F64),
            ("v.b", ScalarType::I32)
        ]
    );
    assert_eq!(
        parsed.program.params.values().next().unwrap().ty,
        ScalarType::F64
    );
    let sets = vec![("scalar".to_string(), " u8 ".to_string())];
    let parsed = tessera_lang::parse(&source("type_alias"), "t", &sets).unwrap();
    assert_eq!(
        parsed.program.fields[parsed.program.field_by_name("v.a").unwrap()].ty,
        ScalarType::U8
    );
    assert_eq!(
        parsed.program.fields[parsed.program.field_by_name("u").unwrap()].ty,
        ScalarType::F32
    );
}

#[test]
fn fields_with_every_border_mode() {
    let p = program("borders");
    let borders: Vec<_> = p.fields.values().map(|f| f.border).collect();
    assert_eq!(
        borders,
        vec![
            Some(Border::Constant(Constant::Float(1.5))),
            Some(Border::Constant(Constant::Int(-7))),
            Some(Border::Clamp),
            Some(Border::Periodic),
            Some(Border::Mirror),
            None
        ]
    );
}

#[test]
fn initial_values() {
    let p = program("init");
    let u = &p.fields[p.field_by_name("u").unwrap()];
    let ExprKind::Binary(BinaryOp::Mul, left, _) = kind(&p, u.init.unwrap()) else {
        panic!()
    };
    assert!(matches!(
        kind(&p, *left),
        ExprKind::Binary(BinaryOp::Mul, ..)
    ));
    let flag = &p.fields[p.field_by_name("flag").unwrap()];
    assert!(matches!(
        kind(&p, flag.init.unwrap()),
        ExprKind::Select { .. }
    ));
    let c = &p.fields[p.field_by_name("c").unwrap()];
    assert_eq!(
        kind(&p, c.init.unwrap()),
        &ExprKind::Literal(Constant::Int(3))
    );
}

#[test]
fn struct_and_vector_fields() {
    let p = program("struct_vector");
    let names: Vec<_> = p.fields.values().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        vec![
            "E.ex", "E.ey", "E.hz", "F.x", "F.y", "F.z", "F.w", "G.p", "G.q"
        ]
    );
    let e = p.groups.values().next().unwrap();
    assert_eq!(e.component_names, vec!["ex", "ey", "hz"]);
    let ex = &p.fields[e.components[0]];
    assert_eq!(
        (ex.border, ex.readonly, ex.group),
        (
            Some(Border::Clamp),
            false,
            Some((tessera_ir::Id::from_index(0), 0))
        )
    );
    let ey = &p.fields[e.components[1]];
    assert!(
        ey.readonly && ey.init.is_some() && ey.border == Some(Border::Periodic),
        "shared attributes apply to members without their own"
    );
    assert_eq!(p.fields[e.components[2]].ty, ScalarType::F64);
    let f = p.groups.values().nth(1).unwrap();
    assert_eq!(f.component_names, vec!["x", "y", "z", "w"]);
    for c in &f.components {
        let field = &p.fields[*c];
        assert_eq!(
            (field.ty, field.border),
            (ScalarType::F32, Some(Border::Periodic))
        );
        assert_eq!(
            kind(&p, field.init.unwrap()),
            &ExprKind::Literal(Constant::Float(0.5))
        );
    }
    let g = p.groups.values().nth(2).unwrap();
    assert!(
        g.components
            .iter()
            .all(|c| p.fields[*c].border == Some(Border::Mirror))
    );
    let r = reads(&p, statement_value(&p, 0, 0));
    assert_eq!(
        r,
        vec![
            ("E.ex".to_string(), vec![0, -1]),
            ("E.ey".to_string(), vec![1, 0])
        ]
    );
    let outputs: Vec<_> = p
        .stages
        .values()
        .next()
        .unwrap()
        .outputs()
        .iter()
        .map(|f| p.fields[*f].name.clone())
        .collect();
    assert_eq!(outputs, vec!["E.ex", "F.w", "G.p"]);
}

#[test]
fn readonly_fields() {
    let p = program("readonly");
    let k = &p.fields[p.field_by_name("k").unwrap()];
    assert!(k.readonly);
    assert_eq!(k.border, Some(Border::Clamp));
    assert!(!p.fields[p.field_by_name("u").unwrap()].readonly);
}

#[test]
fn stage_regions_of_every_form() {
    let p = program("regions");
    let n = SizeExpr::Param(p.param_by_name("N").unwrap());
    let m = SizeExpr::Param(p.param_by_name("M").unwrap());
    let minus_one = |e: &SizeExpr| {
        SizeExpr::Binary(
            SizeOp::Sub,
            Box::new(e.clone()),
            Box::new(SizeExpr::Const(1)),
        )
    };
    let span =
        |lo: Option<SizeExpr>, hi: Option<SizeExpr>, stride: u32| Range::Span { lo, hi, stride };
    let regions: Vec<Vec<Range>> = p
        .stages
        .values()
        .map(|s| s.region.clone().unwrap().ranges)
        .collect();
    assert_eq!(
        regions[0],
        vec![
            span(Some(SizeExpr::Const(1)), Some(minus_one(&n)), 1),
            span(Some(SizeExpr::Const(1)), Some(minus_one(&m)), 1)
        ]
    );
    let half = SizeExpr::Binary(
        SizeOp::Div,
        Box::new(n.clone()),
        Box::new(SizeExpr::Const(2)),
    );
    assert_eq!(
        regions[1],
        vec![
            span(None, Some(half), 1),
            span(Some(SizeExpr::Const(3)), None, 1)
        ]
    );
    assert!(regions[2].iter().all(is_all));
    assert_eq!(
        regions[3],
        vec![Range::Index(SizeExpr::Const(0)), Range::all()]
    );
    assert_eq!(regions[4], vec![Range::all(), Range::Index(minus_one(&m))]);
    assert_eq!(
        regions[5],
        vec![
            span(Some(SizeExpr::Const(1)), Some(minus_one(&n)), 2),
            span(Some(SizeExpr::Const(0)), None, 3)
        ]
    );
    assert_eq!(
        regions[6],
        vec![span(None, None, 2), span(None, Some(m.clone()), 4)]
    );
    assert_eq!(
        regions[7],
        vec![
            Range::Index(minus_one(&n)),
            Range::Index(SizeExpr::Const(0))
        ]
    );
    let text = source("regions");
    let region = p.stages.values().next().unwrap().region.as_ref().unwrap();
    assert_eq!(&text[region.span.range()], "[1..N-1, 1..M-1]");
}

#[test]
fn per_stage_border_overrides() {
    let p = program("stage_borders");
    let stage = p.stages.values().next().unwrap();
    let borders: Vec<_> = stage
        .borders
        .iter()
        .map(|(f, b)| (p.fields[*f].name.as_str(), *b))
        .collect();
    assert_eq!(
        borders,
        vec![
            ("v", Border::Periodic),
            ("u", Border::Constant(Constant::Float(0.0))),
            ("E.ex", Border::Mirror),
            ("E.ey", Border::Mirror)
        ]
    );
    assert_eq!(
        stage.border_of(p.field_by_name("u").unwrap(), &p),
        Some(Border::Constant(Constant::Float(0.0)))
    );
}

#[test]
fn lets_bind_locals_in_order() {
    let p = program("lets");
    let stage = p.stages.values().next().unwrap();
    let names: Vec<_> = stage.locals.values().map(|l| l.name.as_str()).collect();
    assert_eq!(names, vec!["a", "b", "u2", "c"]);
    let b = statement_value(&p, 0, 1);
    let ExprKind::Binary(BinaryOp::Mul, a, _) = kind(&p, b) else {
        panic!()
    };
    assert_eq!(
        kind(&p, *a),
        &ExprKind::Local(tessera_ir::Id::from_index(0))
    );
    let Statement::Assign { field, .. } = stage.body[4] else {
        panic!()
    };
    assert_eq!(p.fields[field].name, "u");
}

#[test]
fn compound_assignment_desugars() {
    let p = program("compound");
    let ops = [BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div];
    for (i, op) in ops.into_iter().enumerate() {
        let Statement::Assign { field, value, .. } = p.stages.values().next().unwrap().body[i]
        else {
            panic!()
        };
        let ExprKind::Binary(got, lhs, _) = kind(&p, value) else {
            panic!()
        };
        assert_eq!(*got, op);
        assert_eq!(
            kind(&p, *lhs),
            &ExprKind::Read {
                field,
                offset: vec![0]
            }
        );
    }
    let Statement::Assign { value, .. } = p.stages.values().next().unwrap().body[2] else {
        panic!()
    };
    let ExprKind::Binary(_, _, rhs) = kind(&p, value) else {
        panic!()
    };
    assert!(
        matches!(kind(&p, *rhs), ExprKind::Binary(BinaryOp::Add, ..)),
        "`c *= b + 1` is `c = c * (b + 1)`"
    );
}

#[test]
fn multi_output_stages() {
    let p = program("multi_output");
    let outputs: Vec<_> = p
        .stages
        .values()
        .next()
        .unwrap()
        .outputs()
        .iter()
        .map(|f| p.fields[*f].name.clone())
        .collect();
    assert_eq!(outputs, vec!["p", "q", "r"]);
}

#[test]
fn in_stage_and_after_step_reductions_and_until() {
    let p = program("reductions");
    let relax = tessera_ir::Id::from_index(0);
    let got: Vec<_> = p
        .reductions
        .values()
        .map(|r| (r.name.as_str(), r.op, r.every, r.placement.clone()))
        .collect();
    assert_eq!(
        got[0],
        ("gosa", ReduceOp::Sum, 2, ReductionPlacement::InStage(relax))
    );
    assert_eq!(
        got[1],
        ("peak", ReduceOp::Max, 1, ReductionPlacement::InStage(relax))
    );
    assert_eq!(
        got[2],
        (
            "total",
            ReduceOp::Sum,
            10,
            ReductionPlacement::AfterStep { region: None }
        )
    );
    assert_eq!((got[3].1, got[3].2), (ReduceOp::Min, 5));
    let ReductionPlacement::AfterStep {
        region: Some(region),
    } = &got[3].3
    else {
        panic!()
    };
    assert!(is_all(&region.ranges[1]));
    assert_eq!((got[4].0, got[4].1, got[4].2), ("high", ReduceOp::Max, 1));
    // `gosa` reads the stage's local `s`.
    let gosa = p.reductions.values().next().unwrap();
    let ExprKind::Binary(BinaryOp::Mul, s, _) = kind(&p, gosa.value) else {
        panic!()
    };
    assert!(matches!(kind(&p, *s), ExprKind::Local(_)));
    // until gosa < 1e-6 || (total > 1e9 && low >= -1.0)
    let until = p.until.as_ref().unwrap();
    let ExprKind::Binary(BinaryOp::Or, left, right) = kind(&p, until.condition) else {
        panic!()
    };
    assert!(matches!(
        kind(&p, *left),
        ExprKind::Binary(BinaryOp::Lt, ..)
    ));
    let ExprKind::Binary(BinaryOp::And, _, ge) = kind(&p, *right) else {
        panic!()
    };
    let ExprKind::Binary(BinaryOp::Ge, low, minus_one) = kind(&p, *ge) else {
        panic!()
    };
    assert_eq!(
        kind(&p, *low),
        &ExprKind::ReductionValue(tessera_ir::Id::from_index(3))
    );
    assert_eq!(
        kind(&p, *minus_one),
        &ExprKind::Literal(Constant::Float(-1.0))
    );
}

#[test]
fn default_steps() {
    assert_eq!(program("steps").default_steps, Some(250));
    assert_eq!(program("grid_1d").default_steps, None);
}

#[test]
fn operators_and_precedence() {
    let p = program("operators");
    // a + b * a - b / a % b  ==  (a + (b * a)) - ((b / a) % b)
    let ExprKind::Binary(BinaryOp::Sub, left, right) = kind(&p, statement_value(&p, 0, 0)) else {
        panic!()
    };
    assert!(
        matches!(kind(&p, *left), ExprKind::Binary(BinaryOp::Add, _, m) if matches!(kind(&p, *m), ExprKind::Binary(BinaryOp::Mul, ..)))
    );
    assert!(
        matches!(kind(&p, *right), ExprKind::Binary(BinaryOp::Rem, d, _) if matches!(kind(&p, *d), ExprKind::Binary(BinaryOp::Div, ..)))
    );
    // -a + -2.0 * b - -(3.0) - -b: unary binds tighter; `-2.0` folds; `-(3.0)` does not.
    let r = statement_value(&p, 0, 2);
    let ExprKind::Binary(BinaryOp::Sub, rest, neg_b) = kind(&p, r) else {
        panic!()
    };
    assert!(matches!(kind(&p, *neg_b), ExprKind::Unary(UnaryOp::Neg, _)));
    let ExprKind::Binary(BinaryOp::Sub, rest, neg_three) = kind(&p, *rest) else {
        panic!()
    };
    assert!(
        matches!(kind(&p, *neg_three), ExprKind::Unary(UnaryOp::Neg, l) if kind(&p, *l) == &ExprKind::Literal(Constant::Float(3.0)))
    );
    let ExprKind::Binary(BinaryOp::Add, neg_a, product) = kind(&p, *rest) else {
        panic!()
    };
    assert!(matches!(kind(&p, *neg_a), ExprKind::Unary(UnaryOp::Neg, _)));
    let ExprKind::Binary(BinaryOp::Mul, lit, _) = kind(&p, *product) else {
        panic!()
    };
    assert_eq!(kind(&p, *lit), &ExprKind::Literal(Constant::Float(-2.0)));
    // `||` is looser than `&&`, which is looser than comparisons.
    // ((a < b || (a <= b && a > b)) || (a >= b && a == b)) || a != b
    let ExprKind::Binary(BinaryOp::Or, or_left, ne) = kind(&p, statement_value(&p, 0, 4)) else {
        panic!()
    };
    assert!(matches!(kind(&p, *ne), ExprKind::Binary(BinaryOp::Ne, ..)));
    let ExprKind::Binary(BinaryOp::Or, or_left, and) = kind(&p, *or_left) else {
        panic!()
    };
    assert!(matches!(
        kind(&p, *and),
        ExprKind::Binary(BinaryOp::And, ..)
    ));
    let ExprKind::Binary(BinaryOp::Or, lt, and) = kind(&p, *or_left) else {
        panic!()
    };
    assert!(matches!(kind(&p, *lt), ExprKind::Binary(BinaryOp::Lt, ..)));
    assert!(
        matches!(kind(&p, *and), ExprKind::Binary(BinaryOp::And, l, _) if matches!(kind(&p, *l), ExprKind::Binary(BinaryOp::Le, ..)))
    );
    let ExprKind::Binary(BinaryOp::And, not, _) = kind(&p, statement_value(&p, 0, 5)) else {
        panic!()
    };
    assert!(matches!(kind(&p, *not), ExprKind::Unary(UnaryOp::Not, _)));
    let all_ops: Vec<BinaryOp> = p
        .exprs
        .values()
        .filter_map(|e| match e.kind {
            ExprKind::Binary(op, ..) => Some(op),
            _ => None,
        })
        .collect();
    for op in [
        BinaryOp::Eq,
        BinaryOp::Ne,
        BinaryOp::Lt,
        BinaryOp::Le,
        BinaryOp::Gt,
        BinaryOp::Ge,
        BinaryOp::Rem,
    ] {
        assert!(all_ops.contains(&op), "{op:?} missing");
    }
}

#[test]
fn if_then_else_ternary_and_select_are_selects() {
    let p = program("conditionals");
    for i in 0..4 {
        assert!(
            matches!(kind(&p, statement_value(&p, 0, i)), ExprKind::Select { .. }),
            "statement {i}"
        );
    }
    // a ? b ? c : d : e nests in the `then` branch.
    let ExprKind::Select { then, .. } = kind(&p, statement_value(&p, 0, 3)) else {
        panic!()
    };
    assert!(matches!(kind(&p, *then), ExprKind::Select { .. }));
    // `1.0 + if c then a else b * 2.0`: the `else` branch extends to the right.
    let ExprKind::Binary(BinaryOp::Add, _, select) = kind(&p, statement_value(&p, 0, 4)) else {
        panic!()
    };
    let ExprKind::Select { otherwise, .. } = kind(&p, *select) else {
        panic!()
    };
    assert!(matches!(
        kind(&p, *otherwise),
        ExprKind::Binary(BinaryOp::Mul, ..)
    ));
}

#[test]
fn conversions() {
    let p = program("casts");
    let casts: Vec<ScalarType> = p
        .exprs
        .values()
        .filter_map(|e| match e.kind {
            ExprKind::Cast(t, _) => Some(t),
            _ => None,
        })
        .collect();
    for t in [
        ScalarType::F32,
        ScalarType::F64,
        ScalarType::I32,
        ScalarType::I64,
        ScalarType::U8,
    ] {
        assert_eq!(casts.iter().filter(|c| **c == t).count(), 2, "{t}");
    }
}

#[test]
fn every_math_function() {
    let p = program("math");
    let calls: Vec<(MathFn, usize)> = p
        .exprs
        .values()
        .filter_map(|e| match &e.kind {
            ExprKind::Call(f, args) => Some((*f, args.len())),
            _ => None,
        })
        .collect();
    for f in MathFn::ALL {
        assert!(calls.contains(&(f, f.arity())), "{} missing", f.name());
    }
}

#[test]
fn coordinates_and_step_counter() {
    let p = program("coords");
    let ExprKind::Binary(BinaryOp::Add, sum, t) = kind(&p, statement_value(&p, 0, 0)) else {
        panic!()
    };
    assert_eq!(kind(&p, *t), &ExprKind::Step);
    let mut coords = Vec::new();
    tessera_analysis::check::visit(&p, *sum, &mut |e| {
        if let ExprKind::Coord(axis) = e.kind {
            coords.push(axis);
        }
    });
    assert_eq!(coords, vec![2, 1, 0], "x is the fastest axis");
}

#[test]
fn comments_are_ignored() {
    let p = program("comments");
    assert_eq!(p.extents, vec![SizeExpr::Const(8)]);
    assert_eq!(p.stages.len(), 1);
    assert!(matches!(
        kind(&p, statement_value(&p, 0, 0)),
        ExprKind::Binary(BinaryOp::Add, ..)
    ));
}

#[test]
fn locals_shadow_fields_and_fields_shadow_parameters() {
    let p = parse_ok(
        "param u: f32 = 1.0; grid [4]; field v: f32; field u2: f32; stage s { let v = 1.0; u2 = v + u; }",
    );
    let Statement::Assign { value, .. } = p.stages.values().next().unwrap().body[1] else {
        panic!()
    };
    let ExprKind::Binary(_, local, param) = kind(&p, value) else {
        panic!()
    };
    assert!(matches!(kind(&p, *local), ExprKind::Local(_)));
    assert!(matches!(kind(&p, *param), ExprKind::Param(_)));
}

#[test]
fn spans_cover_what_was_written() {
    let text = source("reductions");
    let p = parse_ok(&text);
    let stage = p.stages.values().next().unwrap();
    assert_eq!(&text[stage.span.range()], "stage relax");
    let Statement::Assign { span, value, .. } = stage.body[1] else {
        panic!()
    };
    assert_eq!(&text[span.range()], "u = u + s");
    assert_eq!(&text[p.exprs[value].span.range()], "u + s");
    let gosa = p.reductions.values().next().unwrap();
    assert_eq!(&text[gosa.span.range()], "reduce gosa = sum(s * s) every 2");
    assert_eq!(
        &text[stage.locals.values().next().unwrap().span.range()],
        "s"
    );
    assert_eq!(
        &text[p.until.as_ref().unwrap().span.range()],
        "until gosa < 1e-6 || total > 1e9 && low >= -1.0"
    );
    let u = &p.fields[p.field_by_name("u").unwrap()];
    assert_eq!(&text[u.span.range()], "u: f64 border clamp");
    for e in p.exprs.values() {
        assert!(
            e.span.end > e.span.start,
            "every expression has a non-empty span"
        );
    }
}

#[test]
fn a_type_alias_converts_like_its_type() {
    use tessera_ir::ExprKind;
    let casts = |sets: &[(String, String)]| -> Vec<ScalarType> {
        let parsed = tessera_lang::parse(&source("type_alias"), "t", sets).unwrap();
        parsed
            .program
            .exprs
            .values()
            .filter_map(|e| match e.kind {
                ExprKind::Cast(t, _) => Some(t),
                _ => None,
            })
            .collect()
    };
    assert_eq!(casts(&[]), vec![ScalarType::F32]);
    assert_eq!(
        casts(&[("real".to_string(), "f64".to_string())]),
        vec![ScalarType::F64]
    );
}

/// `text` with the stage `diffuse` of `functions.tess` replaced by `stages`.
fn functions_program_with(stages: &str) -> String {
    let text = source("functions");
    let start = text.find("fn lap").unwrap();
    format!("{}{stages}", &text[..start])
}

#[test]
fn functions_and_constants_lower_to_the_program_written_out() {
    let with_functions = program("functions");
    let written_out = parse_ok(&functions_program_with(
        "stage diffuse { u = u + f32(alpha / 4) * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - 4 * u); }\n\
         stage shifted { v = 0.5 * (u[0, 0] + u[2, 0] + u[1, -1] + u[1, 1] - 4 * u[1, 0]) + v; }\n",
    ));
    assert_eq!(
        common::without_spans(&with_functions),
        common::without_spans(&written_out)
    );
    assert_eq!(
        tessera_ir::print_program(&with_functions),
        tessera_ir::print_program(&written_out)
    );
}

#[test]
fn a_function_argument_read_at_an_offset_adds_its_offset() {
    let p = program("functions");
    assert_eq!(
        reads(&p, statement_value(&p, 1, 0)),
        [
            ("u", vec![0, 0]),
            ("u", vec![2, 0]),
            ("u", vec![1, -1]),
            ("u", vec![1, 1]),
            ("u", vec![1, 0]),
            ("v", vec![0, 0]),
        ]
        .map(|(f, o)| (f.to_string(), o))
    );
}

#[test]
fn function_parameters_shadow_globals_and_arguments_see_the_stage_locals() {
    let p = parse_ok(&functions_program_with(
        "fn scaled(alpha, u) = alpha * u;\n\
         stage diffuse { let k = 2.0; u = scaled(k, v[0, 1]); }\n",
    ));
    let value = statement_value(&p, 0, 1);
    let ExprKind::Binary(BinaryOp::Mul, a, b) = kind(&p, value) else {
        panic!("expected a product, found {:?}", kind(&p, value));
    };
    assert!(matches!(kind(&p, *a), ExprKind::Local(_)));
    assert!(matches!(kind(&p, *b), ExprKind::Read { offset, .. } if offset == &[0, 1]));
}

#[test]
fn an_untyped_constant_takes_its_context_type_and_a_typed_one_converts() {
    let p = program("functions");
    let checked = tessera_analysis::check(&p).unwrap();
    let text = tessera_ir::print_program(checked.program());
    assert!(text.contains("v = 0.5 * ("), "{text}");
    assert!(text.contains("u = u + alpha / 4.0 * ("), "{text}");
}

#[test]
fn a_type_suffix_makes_a_literal_its_conversion() {
    let text = "grid [4];\nfield u: f32;\nfield k: i32;\n\
                stage s { u = 1.5f32 * u + -2f64; k = 7u8 + 3i64; }\n";
    let with_suffixes = parse_ok(text);
    let written_out = parse_ok(&text.replace(
        "1.5f32 * u + -2f64; k = 7u8 + 3i64;",
        "f32(1.5) * u + f64(-2.0); k = u8(7) + i64(3);",
    ));
    assert_eq!(
        common::without_spans(&with_suffixes),
        common::without_spans(&written_out)
    );
}

/// The W0001 warnings of `stage`'s program, as (literal text, message).
fn narrowing_warnings(stage: &str) -> Vec<(String, String)> {
    let text = format!(
        "grid [4];\nconst pi: f32 = 3.141592653589793;\nfield u: f32;\nfield d: f64;\n{stage}\n"
    );
    let checked = tessera_analysis::check(&parse_ok(&text)).unwrap();
    checked
        .warnings()
        .iter()
        .map(|w| {
            assert_eq!(w.code, "W0001");
            let span = w.labels[0].span;
            (
                text[span.start as usize..span.end as usize].to_string(),
                w.message.clone(),
            )
        })
        .collect()
}

#[test]
fn a_literal_that_loses_its_digits_is_warned_about_once_where_it_is_written() {
    let warned = narrowing_warnings(
        "stage s { u = pi * u + pi + 16777217 + 1e-50; d = 9007199254740993 + d + pi; }",
    );
    let literals: Vec<&str> = warned.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(
        literals,
        ["3.141592653589793", "16777217", "1e-50", "9007199254740993"]
    );
    assert_eq!(
        warned[0].1,
        "the literal 3.141592653589793 becomes 3.1415927 as `f32`"
    );
    assert_eq!(warned[2].1, "the literal 1e-50 becomes 0.0 as `f32`");
}

#[test]
fn literals_an_f32_holds_as_written_and_typed_literals_are_not_warned_about() {
    let quiet = narrowing_warnings(
        "stage s { u = 0.1 * u + 0.3333333 + 16777216 + 3.141592653589793f64 + f32(2.5e-3); \
         d = 3.141592653589793 * d; }",
    );
    assert_eq!(
        quiet,
        [],
        "the constant `pi` is not used: no use, no warning"
    );
}

#[test]
fn arrays_and_loops_lower_to_the_program_written_out() {
    let with_loops = program("arrays");
    let text = source("arrays");
    let start = text.find("stage collide").unwrap();
    let written_out = parse_ok(&format!(
        "{}{}",
        &text[..start],
        "stage collide {\n\
             let rho = f[0] + f[1] + f[2];\n\
             let feq_0 = f64(0.5) * rho; f[0] = f[0] - 0.5 * (f[0] - feq_0);\n\
             let feq_1 = f64(0.25) * rho; f[1] = f[1] - 0.5 * (f[1] - feq_1);\n\
             let feq_2 = f64(0.25) * rho; f[2] = f[2] - 0.5 * (f[2] - feq_2);\n\
             total = rho;\n\
         }\n\
         stage stream border f[2] = clamp {\n\
             f[0] = f[0][0, 0]; f[1] = f[1][0, -1]; f[2] = f[2][1, 0];\n\
             g[0] = g[0] + f32(0); g[1] = g[1] + f32(1);\n\
         }\n"
    ));
    assert_eq!(
        common::without_spans(&with_loops),
        common::without_spans(&written_out)
    );
    let f = with_loops.groups.values().next().unwrap();
    assert_eq!(f.component_names, ["0", "1", "2"]);
    assert!(with_loops.field_by_name("f.2").is_some());
}

#[test]
fn locals_of_unrolled_iterations_are_named_after_them_and_avoid_taken_names() {
    let text = "grid [4];\nfield f: [f64; 2];\n\
                stage s { let a_0 = 1.0; for i in 0..2 { let a = f[i]; f[i] = a + a_0; } }\n";
    let p = parse_ok(text);
    let names: Vec<&str> = (p.stages.values().next().unwrap().locals.values())
        .map(|l| l.name.as_str())
        .collect();
    assert_eq!(names, ["a_0", "a_0_", "a_1"]);
    let printed = tessera_ir::print_program(&p);
    assert!(printed.contains("let a_0_ = f[0];"), "{printed}");
    common::assert_round_trip("unrolled locals", text, &p);
}

#[test]
fn an_array_element_takes_a_border_override_of_its_own() {
    let p = program("arrays");
    let stream = p.stages.values().nth(1).unwrap();
    let overridden: Vec<&str> = (stream.borders.iter())
        .map(|(f, _)| p.fields[*f].name.as_str())
        .collect();
    assert_eq!(overridden, ["f.2"]);
    assert!(tessera_ir::print_program(&p).contains("stage stream border f[2] = clamp {"));
}

#[test]
fn an_array_element_is_a_field_argument_read_at_offsets() {
    let p = parse_ok(
        "grid [4, 4];\nfield f: [f64; 2] border clamp;\nfn east(g) = g[0, 1];\n\
         stage s { for i in 0..2 { f[i] = east(f[i]) + east(f[1 - i][1, 0]); } }\n",
    );
    assert_eq!(
        reads(&p, statement_value(&p, 0, 1)),
        [("f.1", vec![0, 1]), ("f.0", vec![1, 1])].map(|(f, o)| (f.to_string(), o))
    );
}

#[test]
fn a_reduction_read_by_a_later_stage_is_an_f64_converted_to_its_context() {
    let checked = tessera_analysis::check(&program("reduction_reads")).expect("checks");
    let p = checked.program();
    let normalise = p.stages.ids().nth(1).expect("two stages");
    let mass = p.reduction_by_name("mass").expect("mass");
    let peak = p.reduction_by_name("peak").expect("peak");
    assert_eq!(checked.stage_reduction_reads(normalise), [mass, peak]);
    assert_eq!(checked.stage_read_reductions(), [mass, peak]);
    // Every read is the f64 value; next to f32 (`1 / mass` bound to `u * inverse`) it is
    // converted to f32 by an explicit cast, next to f64 or an integer it stays f64.
    let mut casts = Vec::new();
    for id in (0..p.exprs.len()).map(tessera_ir::Id::from_index) {
        if let ExprKind::ReductionValue(_) = p.exprs[id].kind {
            assert_eq!(checked.ty(id), ScalarType::F64);
        }
        if let ExprKind::Cast(ty, inner) = p.exprs[id].kind
            && let ExprKind::ReductionValue(r) = p.exprs[inner].kind
        {
            casts.push((p.reductions[r].name.clone(), ty));
        }
    }
    casts.sort_by(|a, b| a.0.cmp(&b.0));
    casts.dedup();
    assert_eq!(casts, [("mass".to_string(), ScalarType::F32)]);
}

#[test]
fn tables_are_read_at_the_step_plus_a_constant() {
    let p = program("tables");
    let wavelet = p.table_by_name("wavelet").unwrap();
    let gain = p.table_by_name("gain").unwrap();
    assert_eq!(p.tables[wavelet].ty, ScalarType::F32);
    assert_eq!(p.tables[gain].ty, ScalarType::F64);
    let mut read = Vec::new();
    tessera_analysis::check::visit(&p, statement_value(&p, 0, 0), &mut |e| {
        if let ExprKind::TableRead { table, offset } = e.kind {
            read.push((p.tables[table].name.clone(), offset));
        }
    });
    read.sort();
    let want = [("gain", 2), ("wavelet", -1), ("wavelet", 0), ("wavelet", 1)];
    let want: Vec<(String, i64)> = want.iter().map(|(n, k)| (n.to_string(), *k)).collect();
    assert_eq!(read, want);
}

#[test]
fn receivers_name_a_scalar_field_and_its_points() {
    let p = program("receivers");
    let receiver = |name: &str| &p.receivers[p.receiver_by_name(name).unwrap()];
    let seis = receiver("seis");
    assert_eq!(p.fields[seis.field].name, "u");
    assert_eq!(
        seis.points,
        ReceiverPoints::Fixed(vec![vec![4, 1], vec![4, 3], vec![4, 5]])
    );
    assert_eq!(seis.every, 1);
    let one = receiver("one");
    assert_eq!(p.field_text(one.field), "s.b");
    assert_eq!(one.points, ReceiverPoints::Fixed(vec![vec![3, 0]]));
    assert_eq!(one.every, 3);
    let element = receiver("element");
    assert_eq!(p.field_text(element.field), "f[2]");
    assert_eq!(element.every, 2);
    assert_eq!(receiver("given").points, ReceiverPoints::Input);
}

#[test]
fn scans_along_an_axis_with_their_operation_and_exclusiveness() {
    let p = program("scans");
    let scans: Vec<Vec<(String, tessera_ir::Scan)>> = (p.stages.values())
        .map(|stage| {
            (stage.scans().into_iter())
                .map(|(field, scan)| (p.fields[field].name.clone(), scan))
                .collect()
        })
        .collect();
    let scan = |op, axis, exclusive| tessera_ir::Scan {
        op,
        axis,
        exclusive,
    };
    assert_eq!(
        scans,
        vec![
            vec![("rows".to_string(), scan(ReduceOp::Sum, 1, false))],
            vec![
                ("peak".to_string(), scan(ReduceOp::Max, 0, true)),
                ("n".to_string(), scan(ReduceOp::Min, 0, false)),
            ],
        ]
    );
    // The operand as written (a function inlined, a local read); checking adds the running value.
    let operand = statement_value(&p, 0, 1);
    assert!(matches!(
        kind(&p, operand),
        ExprKind::Binary(BinaryOp::Mul, ..)
    ));
    assert_eq!(
        reads(&p, statement_value(&p, 1, 0)),
        [("u".to_string(), vec![-1, 0])]
    );
    assert_eq!(p.stages.values().nth(1).unwrap().scan_axis(), Some(0));
}
