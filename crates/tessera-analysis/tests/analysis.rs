//! Type checking, binding and tiling analyses on programs built with the builder API.

use std::sync::Arc;

use tessera_analysis::{FieldRole, LinearTerm, Rect, bind, check, linear_form, tile_regions};
use tessera_ir::builder::ProgramBuilder;
use tessera_ir::{
    BinaryOp, Border, Constant, ExprKind, MathFn, Program, Range, Region, ScalarType, SizeExpr,
    SizeOp, Span,
};

fn interior(dims: usize, n: tessera_ir::Id<tessera_ir::Param>, r: i64) -> Region {
    let range = Range::Span {
        lo: Some(SizeExpr::Const(r)),
        hi: Some(SizeExpr::Binary(
            SizeOp::Sub,
            Box::new(SizeExpr::Param(n)),
            Box::new(SizeExpr::Const(r)),
        )),
        stride: 1,
    };
    Region {
        ranges: vec![range; dims],
        span: Span::NONE,
    }
}

/// A 2D five-point Jacobi on `[1..N-1]^2` of type `ty`, optionally with a border and a wider region.
fn jacobi(ty: ScalarType, border: Option<Border>, r: i64) -> Program {
    let mut b = ProgramBuilder::new("jacobi");
    let n = b.param("N", ScalarType::I64, Constant::Int(16));
    b.grid(vec![SizeExpr::Param(n), SizeExpr::Param(n)]);
    let a = b.field("A", ty);
    if let Some(border) = border {
        b.set_border(a, border);
    }
    let mut s = b.stage("update");
    s.over(interior(2, n, r));
    let mut sum = b.read(a, &[0, 0]);
    for off in [[-1, 0], [1, 0], [0, -1], [0, 1]] {
        let read = b.read(a, &off);
        sum = b.binary(BinaryOp::Add, sum, read);
    }
    let fifth = b.lit(Constant::Float(0.2));
    let value = b.binary(BinaryOp::Mul, fifth, sum);
    s.assign(a, value);
    b.finish_stage(s);
    b.finish()
}

#[test]
fn literals_take_the_type_of_their_context() {
    let checked = check(&jacobi(ScalarType::F32, None, 1)).unwrap();
    let program = checked.program();
    let mut literals = 0;
    for (id, expr) in program.exprs.iter() {
        if let ExprKind::Literal(c) = expr.kind {
            literals += 1;
            assert_eq!(checked.ty(id), ScalarType::F32);
            assert_eq!(c, Constant::Float(0.2));
        }
        assert!(
            !matches!(expr.kind, ExprKind::Cast(..)),
            "no conversion is needed in an all-f32 program"
        );
    }
    assert_eq!(literals, 1);
}

#[test]
fn mixed_types_promote_and_casts_become_explicit() {
    let mut b = ProgramBuilder::new("mix");
    b.grid(vec![SizeExpr::Const(8)]);
    let a = b.field("A", ScalarType::F32);
    let c = b.field("C", ScalarType::U8);
    let mut s = b.stage("s");
    let read_c = b.read(c, &[0]);
    let half = b.lit(Constant::Float(0.5));
    let product = b.binary(BinaryOp::Mul, read_c, half); // u8 * float constant -> f64
    let read_a = b.read(a, &[0]);
    let sum = b.binary(BinaryOp::Add, read_a, product); // f32 + f64 -> f64, assigned to f32
    s.assign(a, sum);
    b.finish_stage(s);
    let checked = check(&b.finish()).unwrap();
    let program = checked.program();
    let tessera_ir::Statement::Assign { value, .. } =
        &program.stages.values().next().unwrap().body[0]
    else {
        panic!("expected an assignment")
    };
    assert_eq!(checked.ty(*value), ScalarType::F32);
    let ExprKind::Cast(ScalarType::F32, inner) = program.exprs[*value].kind else {
        panic!("expected a cast to f32")
    };
    assert_eq!(checked.ty(inner), ScalarType::F64);
    let casts = program
        .exprs
        .values()
        .filter(|e| matches!(e.kind, ExprKind::Cast(..)))
        .count();
    assert_eq!(casts, 3, "u8 -> f64, f32 -> f64 and the final f64 -> f32");
}

#[test]
fn type_errors_point_at_the_expression() {
    let mut b = ProgramBuilder::new("bad");
    b.grid(vec![SizeExpr::Const(8)]);
    let a = b.field("A", ScalarType::I32);
    let mut s = b.stage("s");
    let read = b.read(a, &[0]);
    let sqrt = b.call(MathFn::Sqrt, vec![read]);
    s.assign(a, sqrt);
    b.finish_stage(s);
    let errors = check(&b.finish()).unwrap_err();
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0]
            .message
            .contains("`sqrt` takes floats, found `i32`"),
        "{}",
        errors[0].message
    );
    assert!(
        errors[0]
            .help
            .as_deref()
            .unwrap()
            .contains("sqrt(f64(...))")
    );

    let mut b = ProgramBuilder::new("bool");
    b.grid(vec![SizeExpr::Const(8)]);
    let a = b.field("A", ScalarType::F32);
    let mut s = b.stage("s");
    let read = b.read(a, &[0]);
    let zero = b.lit(Constant::Int(0));
    let cmp = b.binary(BinaryOp::Gt, read, zero);
    s.assign(a, cmp);
    b.finish_stage(s);
    let errors = check(&b.finish()).unwrap_err();
    assert!(
        errors[0].message.contains("must be `f32`, found `bool`"),
        "{}",
        errors[0].message
    );
}

#[test]
fn literal_that_does_not_fit_is_an_error() {
    let mut b = ProgramBuilder::new("big");
    b.grid(vec![SizeExpr::Const(8)]);
    let a = b.field("A", ScalarType::U8);
    let mut s = b.stage("s");
    let big = b.lit(Constant::Int(300));
    s.assign(a, big);
    b.finish_stage(s);
    let errors = check(&b.finish()).unwrap_err();
    assert!(errors[0].message.contains("300 does not fit in `u8`"));
}

#[test]
fn footprints_roles_and_dependencies() {
    let checked = check(&jacobi(ScalarType::F64, None, 1)).unwrap();
    let stage = checked.program().stages.ids().next().unwrap();
    let a = checked.program().fields.ids().next().unwrap();
    let fp = checked.footprint(stage, a).unwrap();
    assert_eq!(fp.min, vec![-1, -1]);
    assert_eq!(fp.max, vec![1, 1]);
    assert_eq!(fp.offsets.len(), 5);
    assert!(!fp.has_diagonal());
    assert_eq!(fp.radius(), 1);
    assert_eq!(checked.role(a), FieldRole::Updated);
    let deps = tessera_analysis::deps::dependencies(&checked);
    assert_eq!(deps.len(), 1);
    assert_eq!(
        deps[0].producer,
        tessera_analysis::deps::Producer::PreviousStep(stage)
    );
}

#[test]
fn binding_evaluates_sizes_and_regions() {
    let checked = Arc::new(check(&jacobi(ScalarType::F32, None, 1)).unwrap());
    let bound = bind(checked, &[("N".to_string(), Constant::Int(67))]).unwrap();
    assert_eq!(bound.extents, vec![67, 67]);
    assert_eq!(
        bound.stage_domains[0].rect,
        Rect::new(vec![1, 1], vec![66, 66])
    );
    assert_eq!(bound.updated_points(), 65 * 65);
}

#[test]
fn a_read_leaving_the_grid_without_border_is_an_error() {
    let checked = Arc::new(check(&jacobi(ScalarType::F32, None, 0)).unwrap());
    let errors = bind(checked, &[]).unwrap_err();
    assert_eq!(errors[0].code, "E0409");
    assert!(
        errors[0]
            .message
            .contains("stage `update` reads `A[-1, 0]` outside the grid"),
        "{}",
        errors[0].message
    );
    assert!(errors[0].help.as_deref().unwrap().contains("border"));
    // With a border mode the same program is fine.
    let checked = Arc::new(check(&jacobi(ScalarType::F32, Some(Border::Clamp), 0)).unwrap());
    assert!(bind(checked, &[]).is_ok());
}

#[test]
fn bad_sizes_are_refused() {
    let checked = Arc::new(check(&jacobi(ScalarType::F32, None, 1)).unwrap());
    let zero = bind(checked.clone(), &[("N".into(), Constant::Int(0))]).unwrap_err();
    assert_eq!(zero[0].code, "E0403");
    let small = bind(checked.clone(), &[("N".into(), Constant::Int(1))]).unwrap_err();
    assert_eq!(small[0].code, "E0406");
    assert!(small[0].message.contains("smaller than the stencil"));
    let exact = bind(checked.clone(), &[("N".into(), Constant::Int(3))]).unwrap();
    assert_eq!(exact.updated_points(), 1);
    let huge = bind(checked.clone(), &[("N".into(), Constant::Int(1 << 40))]).unwrap_err();
    assert_eq!(huge[0].code, "E0405");
    let unknown = bind(checked, &[("n".into(), Constant::Int(4))]).unwrap_err();
    assert_eq!(unknown[0].code, "E0401");
    assert!(
        unknown[0]
            .help
            .as_deref()
            .unwrap()
            .contains("did you mean `N`")
    );
}

#[test]
fn tile_regions_grow_backwards_by_the_footprint() {
    let checked = Arc::new(check(&jacobi(ScalarType::F32, None, 1)).unwrap());
    let bound = bind(checked, &[("N".into(), Constant::Int(64))]).unwrap();
    let target = Rect::new(vec![10, 20], vec![20, 30]);
    let regions = tile_regions(&bound, &target, 3);
    assert_eq!(regions.compute[2][0], target);
    assert_eq!(regions.compute[1][0], Rect::new(vec![9, 19], vec![21, 31]));
    assert_eq!(regions.compute[0][0], Rect::new(vec![8, 18], vec![22, 32]));
    assert_eq!(regions.inputs[0], Rect::new(vec![7, 17], vec![23, 33]));
    assert!(regions.redundancy(&target) > 0.0);
    // At the grid's edge the domain clips what is computed, and inputs stay in the grid.
    let corner = Rect::new(vec![0, 0], vec![8, 8]);
    let regions = tile_regions(&bound, &corner, 2);
    assert_eq!(regions.compute[1][0], Rect::new(vec![1, 1], vec![8, 8]));
    assert_eq!(regions.compute[0][0], Rect::new(vec![1, 1], vec![9, 9]));
    assert_eq!(regions.inputs[0], Rect::new(vec![0, 0], vec![10, 10]));
}

#[test]
fn tile_regions_follow_borders() {
    let checked = Arc::new(check(&jacobi(ScalarType::F32, Some(Border::Periodic), 0)).unwrap());
    let bound = bind(checked, &[("N".into(), Constant::Int(32))]).unwrap();
    let regions = tile_regions(&bound, &Rect::new(vec![0, 8], vec![4, 12]), 1);
    // Reading row -1 wraps to row 31: the whole y axis is needed.
    assert_eq!(regions.inputs[0], Rect::new(vec![0, 7], vec![32, 13]));
    let mirror = tessera_analysis::tiling::read_through_border(
        &Rect::new(vec![-3], vec![2]),
        Some(Border::Mirror),
        &[10],
    );
    assert_eq!(mirror, Rect::new(vec![0], vec![4]));
    let clamp = tessera_analysis::tiling::read_through_border(
        &Rect::new(vec![8], vec![13]),
        Some(Border::Clamp),
        &[10],
    );
    assert_eq!(clamp, Rect::new(vec![8], vec![10]));
}

#[test]
fn multi_stage_growth_passes_through_the_producer() {
    // Stage 1 writes B from A (radius 1), stage 2 writes A from B (radius 1).
    let mut b = ProgramBuilder::new("two");
    let n = b.param("N", ScalarType::I64, Constant::Int(40));
    b.grid(vec![SizeExpr::Param(n)]);
    let a = b.field("A", ScalarType::F32);
    let bf = b.field("B", ScalarType::F32);
    for (name, src, dst) in [("first", a, bf), ("second", bf, a)] {
        let mut s = b.stage(name);
        s.over(interior(1, n, 1));
        let l = b.read(src, &[-1]);
        let r = b.read(src, &[1]);
        let sum = b.binary(BinaryOp::Add, l, r);
        s.assign(dst, sum);
        b.finish_stage(s);
    }
    let bound = bind(Arc::new(check(&b.finish()).unwrap()), &[]).unwrap();
    let regions = tile_regions(&bound, &Rect::new(vec![10], vec![20]), 1);
    assert_eq!(regions.compute[0][1], Rect::new(vec![10], vec![20]));
    assert_eq!(regions.compute[0][0], Rect::new(vec![9], vec![21]));
    assert_eq!(regions.inputs[0], Rect::new(vec![8], vec![22]));
}

/// `(A[0,-1] + k * (A[0,1] - A)) / 4` with `k` a parameter, through a `let`.
fn linear_program(nonlinear: bool) -> Program {
    let mut b = ProgramBuilder::new("lin");
    let k = b.param("k", ScalarType::F64, Constant::Float(3.0));
    b.grid(vec![SizeExpr::Const(8), SizeExpr::Const(8)]);
    let a = b.field("A", ScalarType::F64);
    b.set_border(a, Border::Clamp);
    let mut s = b.stage("update");
    let right = b.read(a, &[0, 1]);
    let here = b.read(a, &[0, 0]);
    let difference = b.binary(BinaryOp::Sub, right, here);
    let kv = b.param_value(k);
    let scaled = b.binary(BinaryOp::Mul, kv, difference);
    let local = b.bind(&mut s, "d", scaled);
    let left = b.read(a, &[0, -1]);
    let second = if nonlinear {
        b.binary(BinaryOp::Mul, left, local)
    } else {
        b.binary(BinaryOp::Add, left, local)
    };
    let four = b.lit(Constant::Int(4));
    let value = b.binary(BinaryOp::Div, second, four);
    s.assign(a, value);
    b.finish_stage(s);
    b.finish()
}

#[test]
fn linear_forms_fold_coefficients_through_lets_and_parameters() {
    let bound = bind(Arc::new(check(&linear_program(false)).unwrap()), &[]).unwrap();
    let stage = bound.program().stages.ids().next().unwrap();
    let form = linear_form(&bound, stage).expect("linear");
    let field = form.output;
    let term = |offset: [i32; 2], coefficient: f64| LinearTerm {
        field,
        offset: offset.to_vec(),
        coefficient,
    };
    assert_eq!(
        form.terms,
        vec![term([0, -1], 0.25), term([0, 0], -0.75), term([0, 1], 0.75)]
    );
    assert_eq!(form.constant, 0.0);
    let bound = bind(Arc::new(check(&linear_program(true)).unwrap()), &[]).unwrap();
    assert_eq!(linear_form(&bound, stage), None, "a product of reads");
}
