//! A run on a field of more than 2^31 points (64-bit indexing end to end).
//!
//! About 2 GiB; run with `cargo test -p tessera-cpu --test cpu_large -- --ignored`.

mod common;

use common::*;
use tessera_ir::builder::ProgramBuilder;
use tessera_ir::{BinaryOp, Constant, ScalarType, SizeExpr};
use tessera_plan::{PlanRequest, Strategy};
use tessera_runtime::{Backend, Buffer, FieldSet};

#[test]
#[ignore = "allocates 2 GiB; run explicitly with --ignored"]
fn u8_field_of_two_to_the_31_plus_17_points() {
    const N: usize = (1 << 31) + 17;
    let mut b = ProgramBuilder::new("large");
    let n = b.param("N0", ScalarType::I64, Constant::Int(N as i64));
    b.grid(vec![SizeExpr::Param(n)]);
    let a = b.field("A", ScalarType::U8);
    let mut s = b.stage("bump");
    let here = b.read(a, &[0]);
    let x = b.coord(0);
    let seven = b.lit(Constant::Int(7));
    let m = b.binary(BinaryOp::Rem, x, seven);
    let m = b.cast(ScalarType::U8, m);
    let value = b.binary(BinaryOp::Add, here, m);
    s.assign(a, value);
    b.finish_stage(s);
    let checked = tessera_analysis::check(&b.finish()).expect("checks");
    let bound = tessera_analysis::bind(std::sync::Arc::new(checked), &[]).expect("binds");
    let mut fields = FieldSet {
        shape: vec![N],
        buffers: vec![Buffer::U8(
            (0..N).map(|i| (i % 251) as u8).collect::<Vec<_>>().into(),
        )],
        tables: Vec::new(),
        receiver_points: Vec::new(),
    };
    let options = PlanRequest {
        strategy: Some(Strategy::Parallel),
        ..PlanRequest::default()
    };
    let mut exe = backend()
        .plan_and_prepare(&bound, &options)
        .expect("prepares");
    exe.run(&mut fields, 0, 3, &mut ()).expect("runs");
    let Buffer::U8(values) = &fields.buffers[0] else {
        unreachable!()
    };
    for i in (0..64)
        .chain(N - 4096..N)
        .chain((1 << 31) - 8..(1 << 31) + 8)
    {
        let expected = ((i % 251) as u8).wrapping_add(3 * (i % 7) as u8);
        assert_eq!(values[i], expected, "point {i}");
    }
}
