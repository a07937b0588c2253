//! The program one rank runs: its box of the grid grown by deep halos, as an ordinary program
//! that every backend runs unchanged.
//!
//! A rank's *local box* is the points it owns grown by the halo that `T` steps between
//! exchanges need (Holewinski's backward growth, `tessera_analysis::tiling`). On an axis cut
//! into several ranks the box is clipped to the grid unless some field wraps there (a periodic
//! border), where it reaches past the edge and its points stand for their periodic images. The
//! rank's program is the global one with
//! - the local box as its grid (concrete extents);
//! - coordinates read as the global coordinates of the points' images (`x` → `(x + lo) mod N`),
//!   so that initial values, sources and sub-domain tests see the points they stand for;
//! - each stage's domain translated into the box, and narrowed at cut edges so that reads of
//!   fields without a border stay inside it; a stage with no point in the box is left out; a
//!   sub-domain that the periodic halo cuts in two spans the gap, where its assignments keep
//!   the fields' values;
//! - the reads of fields that do not wrap, past the grid's edge inside a box that reaches past
//!   it, through their own border at the global edge ([`crate::borders`]).
//!
//! The points near a cut edge go wrong as the steps pass (their neighbours beyond the box are
//! missing, read through the field's border mode or not computed), but by no more than the
//! halo in `T` steps: the owned points stay exact, and the exchange restores the halo.

use tessera_analysis::Footprint;
use tessera_analysis::bind::{BoundProgram, Domain, bind};
use tessera_analysis::check::check;
use tessera_analysis::region::Rect;
use tessera_analysis::tiling::local_tile_regions;
use tessera_ir::{
    Arena, BinaryOp, Border, Constant, Expr, ExprKind, Field, Id, Program, Range,
    ReductionPlacement, Region, SizeExpr, Span, Stage, Statement,
};
use tessera_runtime::Pass;
use tessera_runtime::reduce::RowPartials;

use crate::DistributeError;
use crate::borders::{borders_at_global_edges, coordinate_test};
use crate::decompose::Decomposition;
use crate::rows::{owned_values, row_targets};

/// One rank's share of a distributed run: what it owns, the box it computes, its program.
#[derive(Clone, Debug)]
pub struct RankProgram {
    /// The rank.
    pub rank: usize,
    /// The grid points it owns (global coordinates).
    pub owned: Rect,
    /// The points its arrays hold (global coordinates, unwrapped: on a periodic axis they may
    /// lie outside the grid and stand for their images).
    pub local: Rect,
    /// The program it runs, on the local box.
    pub bound: BoundProgram,
    /// Per reduction, where each row of its local domain goes in the global row order
    /// (`None`: a row this rank does not own).
    pub reduction_rows: Vec<Vec<Option<usize>>>,
}

impl RankProgram {
    /// The bytes of one point of every field (the layout of `ActiveRun::read_box`).
    pub fn point_bytes(&self) -> usize {
        (self.bound.program().fields.values())
            .map(|f| f.ty.size_bytes())
            .sum()
    }

    /// The values of the rows this rank owns of each reduction of `pass`, from its backend's
    /// row partials (in the pass's order).
    pub fn owned_values(
        &self,
        pass: &Pass,
        partials: &[RowPartials],
    ) -> Result<Vec<Vec<f64>>, String> {
        if partials.len() != pass.reductions.len() {
            return Err(format!(
                "rank {} computed {} reductions, {} were due",
                self.rank,
                partials.len(),
                pass.reductions.len()
            ));
        }
        (pass.reductions.iter().zip(partials))
            .map(|(r, p)| owned_values(&self.reduction_rows[r.index()], &p.rows))
            .collect()
    }
}

/// Why a program cannot run distributed as it is (a feature this layer does not have yet).
fn unsupported(what: impl Into<String>) -> DistributeError {
    DistributeError::Unsupported(what.into())
}

/// The halo depth below and above the owned box, per axis, that `steps` steps need.
pub fn halo_depths(global: &BoundProgram, owned: &Rect, steps: usize) -> Vec<(i64, i64)> {
    let tile: Vec<i64> = (0..owned.dims()).map(|a| owned.len(a)).collect();
    let regions = local_tile_regions(global, &tile, steps);
    let target = Rect::new(vec![0; tile.len()], tile.clone());
    let hull = (regions
        .inputs
        .iter()
        .chain(regions.compute.iter().flatten()))
    .filter(|r| !r.is_empty())
    .fold(target, |hull, r| hull.hull(r));
    (0..tile.len())
        .map(|a| ((-hull.lo[a]).max(0), (hull.hi[a] - tile[a]).max(0)))
        .collect()
}

/// The smallest extents, from `global`'s own, at which each of `ranks` ranks per axis holds
/// the halo `steps` steps between exchanges need (with an uneven remainder): an axis cut into
/// `k` ranks needs `k` times the halo.
pub fn minimum_extents(global: &BoundProgram, ranks: &[usize], steps: u64) -> Vec<usize> {
    let tile: Vec<i64> = global.extents.iter().map(|&e| e as i64).collect();
    let owned = Rect::new(vec![0; tile.len()], tile);
    let depths = halo_depths(global, &owned, steps.max(1) as usize);
    (global.extents.iter().zip(ranks).zip(&depths))
        .map(|((&e, &k), &(below, above))| match k {
            1 => e,
            _ => e.max(k * below.max(above) as usize + k - 1),
        })
        .collect()
}

/// Whether some field wraps around the grid's edges (a periodic border): then the boxes at
/// the ends of a cut axis reach past the grid's edge and hold the images of the points beyond
/// it.
pub(crate) fn wraps(program: &Program) -> bool {
    let mut borders = (program.fields.values().filter_map(|f| f.border)).chain(
        program
            .stages
            .values()
            .flat_map(|s| s.borders.iter().map(|(_, b)| *b)),
    );
    borders.any(|b| matches!(b, Border::Periodic))
}

/// Per axis, whether the box reaches past the grid's edges (`periodic`: some field wraps).
fn reaches_past(local: &Rect, extents: &[usize], periodic: bool) -> Vec<bool> {
    (0..local.dims())
        .map(|a| periodic && (local.lo[a] < 0 || local.hi[a] > extents[a] as i64))
        .collect()
}

/// The program rank `rank` of `decomposition` runs with `steps` steps between exchanges.
pub fn rank_program(
    global: &BoundProgram,
    decomposition: &Decomposition,
    rank: usize,
    steps: usize,
) -> Result<RankProgram, DistributeError> {
    check_distributable(global, decomposition)?;
    let owned = decomposition.owned(rank);
    box_program(global, decomposition, rank, owned, steps, Reductions::Kept)
}

/// The program of one boundary strip of rank `rank` (see [`crate::overlap`]): the points
/// `strip` (owned by the rank) grown by the halo `steps` steps need, like a rank's box, without
/// reductions or `until` (the rank's own program computes those).
pub fn strip_program(
    global: &BoundProgram,
    decomposition: &Decomposition,
    rank: usize,
    strip: Rect,
    steps: usize,
) -> Result<RankProgram, DistributeError> {
    box_program(
        global,
        decomposition,
        rank,
        strip,
        steps,
        Reductions::Dropped,
    )
}

/// Refuses what a grid cut into ranks cannot run yet.
fn check_distributable(
    global: &BoundProgram,
    decomposition: &Decomposition,
) -> Result<(), DistributeError> {
    let program = global.program();
    let cut = decomposition.ranks.iter().any(|&k| k > 1);
    if cut && !global.checked().stage_read_reductions().is_empty() {
        return Err(unsupported("a reduction read by a later stage of its step"));
    }
    if decomposition.ranks.last() > Some(&1) && !program.reductions.is_empty() {
        return Err(DistributeError::Ranks(
            "reductions need whole rows in each rank: the fastest axis cannot be cut".into(),
        ));
    }
    for stage in program.stages.values() {
        if let Some(axis) = stage.scan_axis().filter(|&a| decomposition.ranks[a] > 1) {
            return Err(unsupported(format!(
                "a scan along a cut axis (stage `{}`, axis {}): cut the other axes",
                stage.name,
                program.axis_names()[axis]
            )));
        }
    }
    Ok(())
}

/// Whether a box's program keeps the global program's reductions.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reductions {
    /// Kept, with their rows placed in the global row order (a rank's program).
    Kept,
    /// Left out, with `until` (a boundary strip's program).
    Dropped,
}

/// The program computing the points `owned` exactly for `steps` steps: on `owned` grown by
/// the halo, rewritten for that box.
fn box_program(
    global: &BoundProgram,
    decomposition: &Decomposition,
    rank: usize,
    owned: Rect,
    steps: usize,
    reductions: Reductions,
) -> Result<RankProgram, DistributeError> {
    let program = global.program();
    let periodic = wraps(program);
    let depths = halo_depths(global, &owned, steps.max(1));
    let local = local_box(global, decomposition, &owned, &depths, periodic)?;
    let rewritten = local_program(global, &local, periodic, reductions)?;
    let checked = check(&rewritten).map_err(|d| DistributeError::Rank(rank, first_message(&d)))?;
    let values: Vec<(String, Constant)> = (program.params.values())
        .zip(&global.param_values)
        .map(|(p, v)| (p.name.clone(), *v))
        .collect();
    let bound = bind(checked.into(), &values)
        .map_err(|d| DistributeError::Rank(rank, first_message(&d)))?;
    let reduction_rows = (bound.reduction_domains.iter())
        .zip(&global.reduction_domains)
        .map(|(domain, global)| row_targets(domain, &local, &owned, global))
        .collect();
    Ok(RankProgram {
        rank,
        owned,
        local,
        bound,
        reduction_rows,
    })
}

/// The owned box grown by the halo on every cut axis, clipped to the grid where the fields do
/// not wrap; refused when a halo is deeper than the neighbouring boxes (it would need points
/// from beyond the next rank).
fn local_box(
    global: &BoundProgram,
    decomposition: &Decomposition,
    owned: &Rect,
    depths: &[(i64, i64)],
    periodic: bool,
) -> Result<Rect, DistributeError> {
    let axes = global.program().axis_names();
    let mut local = owned.clone();
    for (a, &(below, above)) in depths.iter().enumerate() {
        let n = global.extents[a] as i64;
        let ranks = decomposition.ranks[a];
        if ranks == 1 {
            (local.lo[a], local.hi[a]) = (0, n);
            continue;
        }
        let thinnest = n / ranks as i64;
        if below.max(above) > thinnest {
            return Err(DistributeError::Ranks(format!(
                "along {}, {ranks} ranks hold {thinnest} points or more each, fewer than the halo \
                 of {} points the steps between exchanges need: use fewer ranks along {} or \
                 fewer steps between exchanges",
                axes[a],
                below.max(above),
                axes[a]
            )));
        }
        local.lo[a] = owned.lo[a] - below;
        local.hi[a] = owned.hi[a] + above;
        if !periodic {
            local.lo[a] = local.lo[a].max(0);
            local.hi[a] = local.hi[a].min(n);
        }
    }
    Ok(local)
}

/// The global program rewritten for the local box (see the module documentation).
fn local_program(
    global: &BoundProgram,
    local: &Rect,
    periodic: bool,
    reductions: Reductions,
) -> Result<Program, DistributeError> {
    let mut program = global.program().clone();
    // Receivers record from the global run (`Distribution::locate`), not from each rank's.
    program.receivers = Arena::new();
    program.extents = (0..local.dims())
        .map(|a| SizeExpr::Const(local.len(a)))
        .collect();
    let kept = local_stages(global, &mut program, local, periodic)?;
    match reductions {
        Reductions::Kept => local_reductions(global, &mut program, &kept, local, periodic)?,
        Reductions::Dropped => {
            program.reductions = Arena::new();
            program.until = None;
        }
    }
    let past = reaches_past(local, &global.extents, periodic);
    borders_at_global_edges(&mut program, &past, &global.extents)?;
    offset_coordinates(&mut program, local, &global.extents, &past);
    Ok(program)
}

/// Each stage's domain translated into the box (see [`local_domain`]), the stages with no
/// point there left out; returns each global stage's id in the local program.
fn local_stages(
    global: &BoundProgram,
    program: &mut Program,
    local: &Rect,
    periodic: bool,
) -> Result<Vec<Option<Id<Stage>>>, DistributeError> {
    let mut stages = Arena::new();
    let mut kept = Vec::new();
    for (id, stage) in global.program().stages.iter() {
        let reads = Reads {
            what: format!("stage `{}`", stage.name),
            reach: global.checked().stage_footprints(id),
            bordered: &|field| stage.border_of(field, global.program()).is_some(),
        };
        let domain = global.stage_domain(id);
        let Some(within) = local_domain(global, &reads, domain, local, periodic)? else {
            kept.push(None);
            continue;
        };
        let mut body = stage.body.clone();
        if !within.split.is_empty() {
            if !stage.scans().is_empty() {
                return Err(unsupported(format!(
                    "stage `{}`: a scan on a sub-domain that a rank's periodic halo cuts in two",
                    stage.name
                )));
            }
            guard_assignments(program, &mut body, domain, &within.split);
        }
        kept.push(Some(stages.alloc(Stage {
            region: Some(region_of(&within.domain)),
            body,
            ..stage.clone()
        })));
    }
    program.stages = stages;
    Ok(kept)
}

/// Makes each assignment of a stage whose box domain spans points outside its domain (along
/// the `split` axes, where the periodic halo cut it in two) keep the field's value there:
/// `field = select(inside, value, field)`.
fn guard_assignments(
    program: &mut Program,
    body: &mut [Statement],
    domain: &Domain,
    split: &[usize],
) {
    let exprs = &mut program.exprs;
    let node = |exprs: &mut Arena<Expr>, kind| {
        exprs.alloc(Expr {
            kind,
            span: Span::NONE,
        })
    };
    let mut inside = None;
    for &a in split {
        let bounds = [
            (BinaryOp::Ge, domain.rect.lo[a]),
            (BinaryOp::Lt, domain.rect.hi[a]),
        ];
        for (op, bound) in bounds {
            let test = coordinate_test(exprs, Span::NONE, a, 0, op, bound);
            inside = Some(match inside {
                None => test,
                Some(before) => node(exprs, ExprKind::Binary(BinaryOp::And, before, test)),
            });
        }
    }
    let Some(inside) = inside else { return };
    for statement in body {
        if let Statement::Assign { field, value, .. } = statement {
            let kept = node(
                exprs,
                ExprKind::Read {
                    field: *field,
                    offset: vec![0; domain.rect.dims()],
                },
            );
            *value = node(
                exprs,
                ExprKind::Select {
                    cond: inside,
                    then: *value,
                    otherwise: kept,
                },
            );
        }
    }
}

/// Each reduction placed in the box: an in-stage one on its stage's local id, an after-step
/// one on its domain translated into the box.
fn local_reductions(
    global: &BoundProgram,
    program: &mut Program,
    kept: &[Option<Id<Stage>>],
    local: &Rect,
    periodic: bool,
) -> Result<(), DistributeError> {
    for id in program.reductions.ids() {
        let reduction = &mut program.reductions[id];
        match &mut reduction.placement {
            ReductionPlacement::InStage(stage) => {
                *stage = kept[stage.index()].ok_or_else(|| {
                    unsupported(format!(
                        "the in-stage reduction `{}` of a stage with no point in a rank's box",
                        reduction.name
                    ))
                })?;
            }
            ReductionPlacement::AfterStep { region } => {
                let fields = &global.program().fields;
                let reads = Reads {
                    what: format!("reduction `{}`", reduction.name),
                    reach: global.checked().reduction_footprints(id),
                    bordered: &|field| fields[field].border.is_some(),
                };
                let domain = &global.reduction_domains[id.index()];
                // Rows of a split domain outside the global one are not the rank's rows.
                let within = local_domain(global, &reads, domain, local, periodic)?;
                let domain = within.map_or_else(|| outside_point(local), |w| w.domain);
                *region = Some(region_of(&domain));
            }
        }
    }
    Ok(())
}

/// A domain of one point at the middle of the box, for an after-step reduction with no point
/// in it (the reduction must stay, so that reduction numbers agree between ranks; its rows are
/// not the rank's).
fn outside_point(local: &Rect) -> Domain {
    let lo: Vec<i64> = (0..local.dims()).map(|a| local.len(a) / 2).collect();
    let hi = lo.iter().map(|l| l + 1).collect();
    Domain {
        rect: Rect::new(lo, hi),
        stride: vec![1; local.dims()],
    }
}

/// Rewrites every coordinate `c` along axis `a` as the global coordinate of the point's image:
/// `c + lo` (wrapped into `0..N` with `((c + lo) % N + N) % N` where the box reaches past the
/// grid's edge, `reaches_past[a]`).
fn offset_coordinates(
    program: &mut Program,
    local: &Rect,
    extents: &[usize],
    reaches_past: &[bool],
) {
    let coordinates: Vec<_> = (program.exprs.iter())
        .filter_map(|(id, e)| match e.kind {
            ExprKind::Coord(axis) => Some((id, axis, e.span)),
            _ => None,
        })
        .collect();
    for (id, axis, span) in coordinates {
        let lo = local.lo[axis];
        let n = extents[axis] as i64;
        let reaches_past = reaches_past[axis];
        if lo == 0 && !reaches_past {
            continue;
        }
        let mut node = |kind| program.exprs.alloc(Expr { kind, span });
        let int = |v: i64| ExprKind::Literal(Constant::Int(v));
        let coord = node(ExprKind::Coord(axis));
        let lo_literal = node(int(lo));
        let mut kind = ExprKind::Binary(BinaryOp::Add, coord, lo_literal);
        if reaches_past {
            let shifted = node(kind);
            let n1 = node(int(n));
            let rem = node(ExprKind::Binary(BinaryOp::Rem, shifted, n1));
            let n2 = node(int(n));
            let positive = node(ExprKind::Binary(BinaryOp::Add, rem, n2));
            let n3 = node(int(n));
            kind = ExprKind::Binary(BinaryOp::Rem, positive, n3);
        }
        program.exprs[id].kind = kind;
    }
}

/// What a stage or after-step reduction reads, for narrowing its domain in a box.
struct Reads<'a> {
    /// `stage `name`` or `reduction `name``, for messages.
    what: String,
    /// The offsets it reads each field at.
    reach: &'a [(Id<Field>, Footprint)],
    /// Whether its reads of a field have a border mode (else they must stay in the box).
    bordered: &'a dyn Fn(Id<Field>) -> bool,
}

/// A domain in a box: the points of the box standing for points of the domain, and the axes
/// along which it also spans points that do not (see [`image_span`]).
struct BoxDomain {
    /// The domain in the box's own frame.
    domain: Domain,
    /// The axes where the periodic halo cut the domain in two and it spans the gap.
    split: Vec<usize>,
}

/// A stage's (or reduction's) domain in the local box's own frame (`None`: no point of it
/// there), narrowed so that reads of fields without a border stay inside the box.
fn local_domain(
    global: &BoundProgram,
    reads: &Reads,
    domain: &Domain,
    local: &Rect,
    periodic: bool,
) -> Result<Option<BoxDomain>, DistributeError> {
    let mut lo = Vec::new();
    let mut hi = Vec::new();
    let mut split = Vec::new();
    for a in 0..local.dims() {
        let n = global.extents[a] as i64;
        let span = image_span(domain, a, local, n, periodic, &reads.what)?;
        let (mut l, mut h) = (span.lo, span.hi);
        if span.split {
            split.push(a);
        }
        for (field, fp) in reads.reach {
            if !(reads.bordered)(*field) {
                l = l.max(local.lo[a] - i64::from(fp.min[a]));
                h = h.min(local.hi[a] - i64::from(fp.max[a]));
            }
        }
        let stride = domain.stride[a];
        // Keep the domain's phase: the first covered index at or after `l`.
        let phase = (l - domain.rect.lo[a] - span.shift).rem_euclid(stride);
        if phase != 0 {
            l += stride - phase;
        }
        if l >= h {
            return Ok(None);
        }
        lo.push(l - local.lo[a]);
        hi.push(h - local.lo[a]);
    }
    Ok(Some(BoxDomain {
        domain: Domain {
            rect: Rect::new(lo, hi),
            stride: domain.stride.clone(),
        },
        split,
    }))
}

/// The box points (global, unwrapped) along one axis whose images lie in a domain.
struct ImageSpan {
    /// The first.
    lo: i64,
    /// Past the last.
    hi: i64,
    /// The shift from images to those points (a multiple of the extent).
    shift: i64,
    /// The images lie in two pieces (the periodic halo cut the domain in two), and the span
    /// covers the gap between them: points there must keep their values.
    split: bool,
}

/// The span of box points along axis `a` whose images lie in the domain; on a sub-domain that
/// the wrap cuts in two, the span of both pieces and the gap (refused on a strided axis whose
/// stride does not divide the extent: the pieces' strides are out of phase).
fn image_span(
    domain: &Domain,
    a: usize,
    local: &Rect,
    n: i64,
    periodic: bool,
    what: &str,
) -> Result<ImageSpan, DistributeError> {
    let (lo, hi) = (domain.rect.lo[a], domain.rect.hi[a]);
    let box_span = (local.lo[a], local.hi[a]);
    let span = |lo: i64, hi: i64, shift: i64, split: bool| ImageSpan {
        lo,
        hi,
        shift,
        split,
    };
    if !periodic || (box_span.0 >= 0 && box_span.1 <= n) {
        return Ok(span(lo.max(box_span.0), hi.min(box_span.1), 0, false));
    }
    if lo == 0 && hi == n && domain.stride[a] == 1 {
        return Ok(span(box_span.0, box_span.1, 0, false));
    }
    let pieces: Vec<(i64, i64, i64)> = [-n, 0, n]
        .iter()
        .map(|&shift| {
            (
                (lo + shift).max(box_span.0),
                (hi + shift).min(box_span.1),
                shift,
            )
        })
        .filter(|(l, h, _)| l < h)
        .collect();
    match pieces.as_slice() {
        [] => Ok(span(0, 0, 0, false)),
        [(l, h, shift)] => Ok(span(*l, *h, *shift, false)),
        [(l, _, shift), .., (_, h, _)] if n % domain.stride[a] == 0 => {
            Ok(span(*l, *h, *shift, true))
        }
        _ => Err(unsupported(format!(
            "{what}: a sub-domain with a stride that does not divide the extent, which a \
             rank's periodic halo cuts in two"
        ))),
    }
}

/// A domain as a region of constant ranges.
fn region_of(domain: &Domain) -> Region {
    let ranges = (0..domain.rect.dims())
        .map(|a| Range::Span {
            lo: Some(SizeExpr::Const(domain.rect.lo[a])),
            hi: Some(SizeExpr::Const(domain.rect.hi[a])),
            stride: domain.stride[a] as u32,
        })
        .collect();
    Region {
        ranges,
        span: Span::NONE,
    }
}

/// The first diagnostic's message.
fn first_message(diagnostics: &[tessera_ir::Diagnostic]) -> String {
    (diagnostics.first()).map_or_else(|| "no diagnostic".into(), |d| d.message.clone())
}
