//! The predicted global-memory traffic and redundant work of each kernel of a lowered program,
//! per point it computes — a model for `tessera explain`: caches are ignored (every direct
//! load counts), tiles are assumed full, and a shared tile's halo is loaded once per block.

use tessera_analysis::{BoundProgram, Domain, stage_work};
use tessera_ir::{Field, Id, Reduction, Stage};

use super::lower::{Ctx, overlapped, time_streaming, wavefront};
use super::{Expr, Kernel, KernelProgram, ReadBinding, Stmt};

/// What one kernel moves and recomputes, per point it computes.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelTraffic {
    /// Kernel name.
    pub kernel: String,
    /// Points one launch computes.
    pub points: u128,
    /// Bytes loaded from global memory per point: every direct load, shared tiles with their
    /// halos, register-queue refills.
    pub load_bytes: f64,
    /// Of `load_bytes`, the bytes beyond one load per field read (neighbours loaded again,
    /// tile halos, queue refills at chunk starts).
    pub reload_bytes: f64,
    /// Bytes stored to global memory per point.
    pub store_bytes: f64,
    /// Points computed more than once (the halo recomputation of time tiles, Holewinski's
    /// regions), over the points the tile owns.
    pub redundant_fraction: f64,
    /// Reads and operations issued per point ([`tessera_analysis::StageWork`]), recomputed
    /// halo points included.
    pub instructions: f64,
}

impl KernelTraffic {
    /// Bytes loaded and stored per point.
    pub fn bytes(&self) -> f64 {
        self.load_bytes + self.store_bytes
    }
}

/// The traffic model of `kernel`, a kernel of `program` (lowered from `bound`).
pub fn kernel_traffic(
    bound: &BoundProgram,
    program: &KernelProgram,
    kernel: &Kernel,
) -> KernelTraffic {
    let fused = match kernel.strategy {
        "overlapped" => Some(overlapped::block_regions as fn(&Ctx) -> _),
        "streaming-time" => Some(time_streaming::block_regions as fn(&Ctx) -> _),
        "wavefront" => Some(wavefront::block_regions as fn(&Ctx) -> _),
        _ => None,
    };
    if let Some(block_regions) = fused {
        let ctx = Ctx::new(bound, &program.plan);
        return overlapped::traffic(&ctx, kernel, block_regions(&ctx));
    }
    let fields = &bound.program().fields;
    let evaluation = evaluation(&kernel.body);
    let (stage, reads, outputs, points) = match evaluation {
        Some(Evaluation::Stage(stage, reads, outputs)) => (
            Some(stage),
            reads,
            outputs,
            domain_points(bound.stage_domain(stage)),
        ),
        Some(Evaluation::Reduction(reduction, reads)) => (
            None,
            reads,
            Vec::new(),
            domain_points(&bound.reduction_domains[reduction.index()]),
        ),
        None => (None, Vec::new(), Vec::new(), 0),
    };
    let mut order: Vec<Id<Field>> = Vec::new();
    for read in &reads {
        if !order.contains(&read.field) {
            order.push(read.field);
        }
    }
    let (mut load_bytes, mut reload_bytes) = (0.0, 0.0);
    for field in order {
        let bindings: Vec<&ReadBinding> = reads.iter().filter(|r| r.field == field).collect();
        let loads = field_loads(bound, program, kernel, stage, &bindings);
        let size = fields[field].ty.size_bytes() as f64;
        load_bytes += loads * size;
        reload_bytes += (loads - 1.0).max(0.0) * size;
    }
    let store_bytes = outputs
        .iter()
        .map(|f| fields[*f].ty.size_bytes() as f64)
        .sum();
    let work = match stage {
        Some(stage) => stage_work(bound.program(), stage).instructions(),
        None => reads.len() as u32,
    };
    KernelTraffic {
        kernel: kernel.name.clone(),
        points,
        load_bytes,
        reload_bytes,
        store_bytes,
        // One stage for one step: every point is computed once.
        redundant_fraction: 0.0,
        instructions: f64::from(work),
    }
}

/// Points of a domain.
fn domain_points(domain: &Domain) -> u128 {
    if domain.rect.is_empty() {
        return 0;
    }
    (0..domain.rect.dims())
        .map(|a| ((domain.rect.hi[a] - 1 - domain.rect.lo[a]) / domain.stride[a] + 1) as u128)
        .product()
}

/// What a kernel evaluates: a stage (its reads and outputs) or a reduction (its reads); each
/// read's value is resolved through the variable it was loaded into.
enum Evaluation {
    Stage(Id<Stage>, Vec<ReadBinding>, Vec<Id<Field>>),
    Reduction(Id<Reduction>, Vec<ReadBinding>),
}

/// The first stage or reduction evaluation in `body`.
fn evaluation(body: &[Stmt]) -> Option<Evaluation> {
    let resolved = |reads: &[ReadBinding]| -> Vec<ReadBinding> {
        reads
            .iter()
            .map(|read| {
                let value = match &read.value {
                    Expr::Var(name) => body.iter().find_map(|stmt| match stmt {
                        Stmt::Declare {
                            var,
                            value: Some(value),
                            ..
                        } if var == name => Some(value.clone()),
                        _ => None,
                    }),
                    _ => None,
                };
                ReadBinding {
                    value: value.unwrap_or_else(|| read.value.clone()),
                    ..read.clone()
                }
            })
            .collect()
    };
    body.iter().find_map(|stmt| match stmt {
        Stmt::Stage(eval) if !eval.outputs.is_empty() => Some(Evaluation::Stage(
            eval.stage,
            resolved(&eval.env.reads),
            eval.outputs.iter().map(|(f, _)| *f).collect(),
        )),
        Stmt::Stage(eval) => eval
            .reductions
            .first()
            .map(|(r, _)| Evaluation::Reduction(*r, resolved(&eval.env.reads))),
        Stmt::Reduce(eval) => Some(Evaluation::Reduction(
            eval.reduction,
            resolved(&eval.env.reads),
        )),
        Stmt::If {
            then, otherwise, ..
        }
        | Stmt::UniformIf {
            then, otherwise, ..
        } => evaluation(then).or_else(|| evaluation(otherwise)),
        Stmt::UniformCases(cases) => cases.iter().find_map(|(_, body)| evaluation(body)),
        Stmt::For { body, .. } | Stmt::Block(body) => evaluation(body),
        _ => None,
    })
}

/// Global loads of one field per point, from where its reads come from: a shared tile (its
/// elements over the tile's points), register queues (one new plane per column and point,
/// plus each queue's prefill at every chunk start, and the in-plane reads loaded directly), or
/// direct loads (one per offset).
fn field_loads(
    bound: &BoundProgram,
    program: &KernelProgram,
    kernel: &Kernel,
    stage: Option<Id<Stage>>,
    bindings: &[&ReadBinding],
) -> f64 {
    let dims = bound.extents.len();
    let streaming = kernel.strategy == "streaming";
    let s = if dims >= 3 {
        dims - 3
    } else {
        dims.saturating_sub(2)
    };
    // The planes a queue reloads at each chunk start, per plane it holds.
    let per_chunk = || {
        let Some(stage) = stage else { return 0.0 };
        let sweep = bound.stage_domain(stage).rect.len(s).max(1);
        let chunk = program
            .plan
            .stream_chunk
            .map_or(sweep, i64::from)
            .clamp(1, sweep);
        1.0 / chunk as f64
    };
    let queue_refill = || {
        let lo = bindings
            .iter()
            .map(|b| b.offset[s])
            .min()
            .unwrap_or(0)
            .min(0);
        let hi = bindings
            .iter()
            .map(|b| b.offset[s])
            .max()
            .unwrap_or(0)
            .max(0);
        f64::from(hi - lo) * per_chunk()
    };
    let shared = bindings.iter().find_map(|b| shared_array(&b.value));
    if let Some(array) = shared.and_then(|name| kernel.shared.iter().find(|a| a.name == name)) {
        let first = dims - array.dims.len();
        let in_tile: Vec<&&ReadBinding> = bindings
            .iter()
            .filter(|b| shared_array(&b.value).is_some())
            .collect();
        let mut tile_points = 1.0;
        for (j, &with_halo) in array.dims.iter().enumerate() {
            let axis = first + j;
            let lo = in_tile.iter().map(|b| b.offset[axis]).min().unwrap_or(0);
            let hi = in_tile.iter().map(|b| b.offset[axis]).max().unwrap_or(0);
            tile_points *= (with_halo as i64 - i64::from(hi - lo)).max(1) as f64;
        }
        let tile_loads = array.dims.iter().product::<usize>() as f64 / tile_points;
        return if streaming {
            tile_loads + queue_refill()
        } else {
            tile_loads
        };
    }
    if streaming && bindings.iter().any(|b| matches!(b.value, Expr::Var(_))) {
        // A thread's elements are consecutive rows of the block's y axis, the plane's first
        // axis where the plane has two (3D).
        let plane_axes = dims - s - 1;
        let elements = if plane_axes >= 2 {
            program.plan.elements_per_thread.max(1)
        } else {
            1
        };
        return queued_loads(bindings, s, elements, per_chunk());
    }
    bindings.iter().filter(|b| loads_global(&b.value)).count() as f64
}

/// Global loads per point of a field a single-step streaming kernel keeps in register queues,
/// from its reads at the first of a thread's `elements` (offsets with the streaming axis at
/// `s`). Each in-plane offset read at more than the current plane (and the point's own) is a
/// column with a queue: one new plane per iteration, plus its other planes again at every
/// chunk start (`per_chunk`). Other reads load directly. A read `dy` rows off along the
/// plane's first axis is the queue of the element `dy` rows away, where there is one with
/// that column: `elements` 4 of j3d7pt load 14 values for 4 points, of j3d27pt 18 (5 and 9
/// for one).
fn queued_loads(bindings: &[&ReadBinding], s: usize, elements: u32, per_chunk: f64) -> f64 {
    // Each column's in-plane offset and the planes it spans.
    let own = vec![0; bindings[0].offset.len() - s - 1];
    let mut columns: Vec<(&[i32], i32, i32)> = vec![(&own, 0, 0)];
    for b in bindings.iter().filter(|b| b.offset[s] != 0) {
        if !columns.iter().any(|c| c.0 == &b.offset[s + 1..]) {
            columns.push((&b.offset[s + 1..], 0, 0));
        }
    }
    for b in bindings {
        if let Some(c) = columns.iter_mut().find(|c| c.0 == &b.offset[s + 1..]) {
            (c.1, c.2) = (c.1.min(b.offset[s]), c.2.max(b.offset[s]));
        }
    }
    // Whether element `e` reads `offset` (planes `lo..=hi`) from another element's queue: the
    // column of the same row offset, `offset[0]` elements away.
    let shared = |e: i64, offset: &[i32], lo: i32, hi: i32| {
        let other = e + i64::from(offset[0]);
        offset[0] != 0
            && (0..i64::from(elements)).contains(&other)
            && (columns.iter())
                .any(|c| c.0[0] == 0 && c.0[1..] == offset[1..] && c.1 <= lo && hi <= c.2)
    };
    let direct: Vec<&[i32]> = (bindings.iter())
        .map(|b| &b.offset[s + 1..])
        .filter(|offset| !columns.iter().any(|c| c.0 == *offset))
        .collect();
    let mut loads = 0.0;
    for e in 0..i64::from(elements) {
        for &(offset, lo, hi) in &columns {
            if !shared(e, offset, lo, hi) {
                loads += 1.0 + f64::from(hi - lo) * per_chunk;
            }
        }
        loads += direct
            .iter()
            .filter(|offset| !shared(e, offset, 0, 0))
            .count() as f64;
    }
    loads / f64::from(elements)
}

/// The shared array an expression reads, if any.
fn shared_array(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::SharedLoad { array, .. } => Some(array),
        Expr::Select(c, a, b) => shared_array(c)
            .or_else(|| shared_array(a))
            .or_else(|| shared_array(b)),
        Expr::Unary(_, a) | Expr::Cast(_, a) => shared_array(a),
        Expr::Binary(_, a, b) => shared_array(a).or_else(|| shared_array(b)),
        _ => None,
    }
}

/// Whether an expression loads from global memory.
fn loads_global(expr: &Expr) -> bool {
    match expr {
        Expr::Load { .. } => true,
        Expr::Select(c, a, b) => loads_global(c) || loads_global(a) || loads_global(b),
        Expr::Unary(_, a) | Expr::Cast(_, a) => loads_global(a),
        Expr::Binary(_, a, b) => loads_global(a) || loads_global(b),
        _ => false,
    }
}
