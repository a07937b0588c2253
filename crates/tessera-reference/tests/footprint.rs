//! Footprint soundness and minimality (TESTING.md §11): for random stencils, the offsets the
//! interpreter actually reads are exactly the footprints the analysis computed.

mod common;

use std::collections::BTreeMap;

use common::*;
use proptest::prelude::*;
use tessera_ir::builder::ProgramBuilder;
use tessera_ir::{BinaryOp, Border, Constant, ReduceOp, ScalarType};
use tessera_reference::trace_reads;

/// One random stage: reads `(field, offset)`, written fields, strides, how many reads go into a
/// `let`, and whether the last read feeds an in-stage reduction.
#[derive(Clone, Debug)]
struct StageSpec {
    reads: Vec<(usize, Vec<i32>)>,
    writes: Vec<usize>,
    stride: Vec<u32>,
    in_let: usize,
    reduction: bool,
}

#[derive(Clone, Debug)]
struct Spec {
    extents: Vec<usize>,
    /// Per field: 0 = no border, 1 clamp, 2 periodic, 3 mirror, 4 constant.
    borders: Vec<u8>,
    stages: Vec<StageSpec>,
}

fn stage_spec(dims: usize) -> impl Strategy<Value = StageSpec> {
    (
        prop::collection::vec((0usize..3, prop::collection::vec(-2i32..=2, dims)), 1..7),
        prop::collection::vec(0usize..3, 1..3),
        prop::collection::vec(1u32..=3, dims),
        0usize..3,
        any::<bool>(),
    )
        .prop_map(|(reads, writes, stride, in_let, reduction)| StageSpec {
            reads,
            writes,
            stride,
            in_let,
            reduction,
        })
}

fn spec() -> impl Strategy<Value = Spec> {
    (1usize..=3).prop_flat_map(|dims| {
        (
            prop::collection::vec(5usize..9, dims),
            prop::collection::vec(0u8..5, 1..=3),
            prop::collection::vec(stage_spec(dims), 1..=3),
        )
            .prop_map(|(extents, borders, stages)| Spec {
                extents,
                borders,
                stages,
            })
    })
}

/// Builds the program of `spec`; regions keep reads of border-less fields inside the grid.
fn build(spec: &Spec) -> tessera_ir::Program {
    let dims = spec.extents.len();
    let mut b = ProgramBuilder::new("random");
    b.grid(extents(
        &spec.extents.iter().map(|&e| e as i64).collect::<Vec<_>>(),
    ));
    let fields: Vec<_> = spec
        .borders
        .iter()
        .enumerate()
        .map(|(i, &mode)| {
            let f = b.field(format!("f{i}"), ScalarType::F64);
            let border = match mode {
                1 => Some(Border::Clamp),
                2 => Some(Border::Periodic),
                3 => Some(Border::Mirror),
                4 => Some(Border::Constant(Constant::Float(0.5))),
                _ => None,
            };
            if let Some(border) = border {
                b.set_border(f, border);
            }
            f
        })
        .collect();
    for (k, stage) in spec.stages.iter().enumerate() {
        let field_of = |i: usize| fields[i % fields.len()];
        let mut ranges = Vec::new();
        for axis in 0..dims {
            let unbordered = stage
                .reads
                .iter()
                .filter(|(f, _)| spec.borders[f % fields.len()] == 0);
            let lo = unbordered
                .clone()
                .map(|(_, o)| -o[axis])
                .max()
                .unwrap_or(0)
                .max(0);
            let hi_margin = unbordered.map(|(_, o)| o[axis]).max().unwrap_or(0).max(0);
            ranges.push((
                i64::from(lo),
                (spec.extents[axis] as i64) - i64::from(hi_margin),
                stage.stride[axis],
            ));
        }
        let mut s = b.stage(format!("s{k}"));
        s.over(region(&ranges));
        let reads: Vec<_> = stage
            .reads
            .iter()
            .map(|(f, o)| b.read(field_of(*f), o))
            .collect();
        let in_let = stage.in_let.min(reads.len() - 1);
        let reduced = if stage.reduction && reads.len() - in_let > 1 {
            reads.last().copied()
        } else {
            None
        };
        let body_reads = &reads[in_let..reads.len() - usize::from(reduced.is_some())];
        let mut local = None;
        if in_let > 0 {
            let sum = reads[..in_let]
                .iter()
                .skip(1)
                .fold(reads[0], |acc, &r| b.binary(BinaryOp::Add, acc, r));
            local = Some(b.bind(&mut s, "l", sum));
        }
        let mut value = body_reads
            .iter()
            .skip(1)
            .fold(body_reads[0], |acc, &r| b.binary(BinaryOp::Mul, acc, r));
        if let Some(l) = local {
            value = b.binary(BinaryOp::Sub, value, l);
        }
        let mut written = stage
            .writes
            .iter()
            .map(|&w| field_of(w))
            .collect::<Vec<_>>();
        written.dedup();
        for f in written {
            s.assign(f, value);
        }
        if let Some(r) = reduced {
            let e = match local {
                Some(l) => b.binary(BinaryOp::Add, r, l),
                None => r,
            };
            s.reduce(format!("r{k}"), ReduceOp::Sum, e, 1);
        }
        b.finish_stage(s);
    }
    b.finish()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn traced_reads_are_exactly_the_footprints(spec in spec()) {
        let p = bound(build(&spec));
        let mut fields = init(&p);
        for f in p.program().fields.ids() {
            set(&mut fields, f, &random(f.index() as u64 + 1, p.cell_count()));
        }
        let trace = trace_reads(&p, &fields, 0).unwrap();
        let mut traced: BTreeMap<_, Vec<Vec<i32>>> = BTreeMap::new();
        for (stage, field, offset) in trace {
            traced.entry((stage, field)).or_default().push(offset);
        }
        let mut analysed = BTreeMap::new();
        for stage in p.program().stages.ids() {
            for (field, footprint) in p.checked().stage_footprints(stage) {
                analysed.insert((stage, *field), footprint.offsets.clone());
            }
        }
        prop_assert!(!traced.is_empty());
        prop_assert_eq!(traced, analysed);
    }
}
