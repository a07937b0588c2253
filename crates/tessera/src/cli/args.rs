//! The command line, as clap derives it.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand, ValueEnum};
use tessera::session::parse_set;
use tessera::{
    Arithmetic, DeviceSelection, Error, PlanRequest, PlaneReads, Session, Strategy, TargetIsa,
};

/// Tessera: a stencil compiler and runtime.
#[derive(Debug, Parser)]
#[command(name = "tessera", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a program: inputs from files, outputs to .npy/.png/.vti, a summary line.
    Run(RunArgs),
    /// Parse, check and bind a program; print its diagnostics or a summary.
    Check(ProgramArgs),
    /// Print the code a backend generates (the IR for `reference`).
    Emit(EmitArgs),
    /// Print the plan a run would use (`--json`: as a plan file for `run --plan`).
    Plan(PlanArgs),
    /// Time a program: median of repeated runs, GCells/s, and the roofline bound.
    Bench(BenchArgs),
    /// Describe the plan, footprints, memory traffic and roofline of a program.
    Explain(ExplainArgs),
    /// Search the plan space by timing candidates; store the best in the tuning database.
    Tune(TuneArgs),
    /// Run a program on a backend and on the reference; compare every field and reduction.
    Verify(VerifyArgs),
    /// The on-disk cache of compiled kernels.
    Cache {
        /// `dir` or `clear`.
        #[command(subcommand)]
        action: CacheAction,
    },
}

/// What to do with the kernel cache.
#[derive(Debug, Subcommand)]
pub enum CacheAction {
    /// Print the cache directory.
    Dir,
    /// Remove every cached kernel.
    Clear,
}

/// A program and its `--set` values.
#[derive(Debug, Args)]
pub struct ProgramArgs {
    /// The program (`*.tess`).
    pub program: PathBuf,
    /// Set a parameter or replace a type alias: `--set N=1024`, `--set real=f64`.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub sets: Vec<String>,
}

impl ProgramArgs {
    /// Loads, checks and binds the program.
    pub fn load(&self) -> Result<Session, Error> {
        let sets = self
            .sets
            .iter()
            .map(|s| parse_set(s))
            .collect::<Result<Vec<_>, _>>()?;
        let session = Session::load(&self.program, &sets)?;
        if let Some(warnings) = session.rendered_warnings(std::io::stderr().is_terminal()) {
            eprint!("{warnings}");
        }
        Ok(session)
    }
}

/// The `--backend` help: every backend of this build.
fn backend_help() -> String {
    format!(
        "Backend: {} (this build). Default: cpu if a C compiler works, else reference",
        tessera::backend_names().join(", ")
    )
}

/// The strategy names `--strategy` takes.
fn strategy_parser() -> impl TypedValueParser<Value = Strategy> {
    PossibleValuesParser::new(Strategy::ALL.map(Strategy::name))
        .map(|name| Strategy::from_name(&name).expect("a listed strategy"))
}

/// The names `--plane-reads` takes.
fn plane_reads_parser() -> impl TypedValueParser<Value = PlaneReads> {
    PossibleValuesParser::new(PlaneReads::ALL.map(PlaneReads::name))
        .map(|name| PlaneReads::from_name(&name).expect("a listed way"))
}

/// How to execute: backend, the plan's decisions or a plan file, and the device.
#[derive(Debug, Args)]
pub struct ExecArgs {
    #[arg(long, env = "TESSERA_BACKEND", value_name = "B", help = backend_help())]
    pub backend: Option<String>,
    /// Strategy (cpu: naive, parallel, blocked, overlapped, wavefront; cuda and opencl: naive, tiled, streaming, overlapped, wavefront).
    #[arg(long, value_parser = strategy_parser(), value_name = "S")]
    pub strategy: Option<Strategy>,
    /// Spatial tile (cpu) or block (GPUs), slowest axis first: `32x32`.
    #[arg(long, value_parser = parse_tile, value_name = "AxB")]
    pub tile: Option<Tile>,
    /// Steps fused per pass.
    #[arg(long, value_parser = at_least_one_u32, value_name = "T")]
    pub time_tile: Option<u32>,
    /// Bitwise-reproducible arithmetic (equal to the reference backend).
    #[arg(long)]
    pub exact: bool,
    /// Threads for CPU backends (default: all cores).
    #[arg(long, value_parser = at_least_one, value_name = "N")]
    pub threads: Option<usize>,
    /// GPU `streaming`: read in-plane neighbours from a shared current plane or through the
    /// cache (default: the planner's choice, `cache`).
    #[arg(long, value_parser = plane_reads_parser(), value_name = "R")]
    pub plane_reads: Option<PlaneReads>,
    /// GPU streaming time tiles: load each input plane this many sweep iterations before it
    /// is stored (0: none, the default; rounded down to a divisor of the sweep's unrolling).
    #[arg(long, value_name = "PLANES")]
    pub prefetch: Option<u32>,
    /// Device for GPU backends (`platform:device` or an index).
    #[arg(long, value_name = "D")]
    pub device: Option<String>,
    /// Instruction set the cpu backend's code is written for (native: the host's best).
    #[arg(long, env = "TESSERA_TARGET_ISA", value_parser = isa_parser(), value_name = "ISA")]
    pub target_isa: Option<Isa>,
    /// Run exactly this plan (from `tessera plan --json`) instead of planning: it names the
    /// backend and fixes strategy, tiles, time tile, threads and exactness.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["strategy", "tile", "time_tile", "exact", "threads", "target_isa", "plane_reads", "prefetch"])]
    pub plan: Option<PathBuf>,
    /// Ignore the tuning database: plan with the backend's model even when `tessera tune`
    /// stored a plan for this program, size and device.
    #[arg(long)]
    pub no_tuned: bool,
    /// Refuse a run whose host memory estimate (`tessera explain` shows it) exceeds this size:
    /// `4G`, `512MiB`, `1e9` (without it, the memory the machine has available is the limit).
    #[arg(long, env = "TESSERA_MAX_MEMORY", value_parser = parse_memory, value_name = "SIZE")]
    pub max_memory: Option<u64>,
}

/// A `--max-memory` value.
fn parse_memory(text: &str) -> Result<u64, String> {
    tessera_runtime::memory::parse_bytes(text)
}

impl ExecArgs {
    /// Whether the tuning database may give the plan: not with `--no-tuned` nor when a flag
    /// constrains the plan (`--plan`, `--strategy`, `--tile`, `--time-tile`, `--threads`,
    /// `--target-isa`); `--exact` and `--device` choose the entry instead.
    pub fn uses_tuned(&self) -> bool {
        !self.no_tuned
            && self.plan.is_none()
            && self.strategy.is_none()
            && self.tile.is_none()
            && self.time_tile.is_none()
            && self.threads.is_none()
            && self.target_isa.is_none()
            && self.plane_reads.is_none()
            && self.prefetch.is_none()
    }

    /// The plan request these flags describe, for the device `device`.
    pub fn request(&self, device: DeviceSelection) -> PlanRequest {
        PlanRequest {
            strategy: self.strategy,
            tile: self.tile.as_ref().map(|t| t.0.clone()),
            time_tile: self.time_tile,
            threads: self.threads,
            arithmetic: Arithmetic::exact_if(self.exact),
            device,
            isa: self.target_isa.and_then(|isa| isa.0),
            plane_reads: self.plane_reads,
            prefetch: self.prefetch,
        }
    }
}

/// A `--target-isa` value: a target, or `native` (`None`: the host's best).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Isa(pub Option<TargetIsa>);

/// The names `--target-isa` takes.
fn isa_parser() -> impl TypedValueParser<Value = Isa> {
    let names: Vec<&str> = (TargetIsa::ALL.iter().map(|t| t.name()))
        .chain(["native"])
        .collect();
    PossibleValuesParser::new(names).map(|name| Isa(TargetIsa::from_name(&name)))
}

/// A spatial tile size per axis.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tile(pub Vec<usize>);

/// Parses `32x32` (every size at least 1).
fn parse_tile(text: &str) -> Result<Tile, String> {
    text.split(['x', 'X'])
        .map(at_least_one)
        .collect::<Result<Vec<_>, _>>()
        .map(Tile)
}

/// Parses a step count that must be at least 1.
fn at_least_one_u32(text: &str) -> Result<u32, String> {
    let n = at_least_one(text)?;
    u32::try_from(n).map_err(|_| format!("`{text}` is too large"))
}

/// Parses a count that must be at least 1.
fn at_least_one(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("`{text}` is not a whole number")),
    }
}

/// Parses a time budget: `60s`, `2m`, `500ms`, `1h` or a number of seconds; more than zero.
fn parse_budget(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let scale = match unit {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => {
            return Err(format!(
                "`{text}` is not a duration (e.g. `60s`, `2m`, `500ms`)"
            ));
        }
    };
    match number.parse::<f64>() {
        Ok(v) if v > 0.0 && (v * scale).is_finite() => Ok(Duration::from_secs_f64(v * scale)),
        Ok(_) => Err(format!(
            "`{text}` is no time at all; give a budget above zero"
        )),
        Err(_) => Err(format!(
            "`{text}` is not a duration (e.g. `60s`, `2m`, `500ms`)"
        )),
    }
}

/// Parses a positive number.
fn positive(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Ok(v),
        _ => Err(format!("`{text}` is not a positive number")),
    }
}

/// `FIELD=path` for inputs and outputs; outputs may leave out `FIELD=` for the program's
/// main field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldFile {
    /// The field (or struct/vector field) name; `None` for the main field.
    pub field: Option<String>,
    /// The file.
    pub path: PathBuf,
}

fn parse_field_file(text: &str) -> Result<FieldFile, String> {
    match text.split_once('=') {
        Some((field, path)) if !field.is_empty() && !path.is_empty() => Ok(FieldFile {
            field: Some(field.to_string()),
            path: path.into(),
        }),
        None if !text.is_empty() => Ok(FieldFile {
            field: None,
            path: text.into(),
        }),
        _ => Err(format!("`{text}` is not of the form FIELD=FILE")),
    }
}

fn parse_input_file(text: &str) -> Result<FieldFile, String> {
    parse_field_file(text).and_then(|f| match f.field {
        Some(_) => Ok(f),
        None => Err(format!(
            "`{text}` is not of the form FIELD=FILE (name the field the file fills)"
        )),
    })
}

/// Where a run starts: its step count and the files initial values come from.
#[derive(Debug, Args)]
pub struct StartArgs {
    /// Time steps (default: the program's `steps`, else 1).
    #[arg(long, value_name = "N")]
    pub steps: Option<u64>,
    /// Initial values of a field from a .npy file (or a .png for u8 fields), or the values of
    /// an input table (`table NAME: TYPE;`) from a 1D .npy file.
    #[arg(long = "input", value_parser = parse_input_file, value_name = "FIELD=FILE")]
    pub inputs: Vec<FieldFile>,
}

impl StartArgs {
    /// The steps to run: `--steps`, else the program's default.
    pub fn steps(&self, session: &Session) -> u64 {
        self.steps.unwrap_or_else(|| session.default_steps())
    }
}

/// `tessera run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The program and its settings.
    #[command(flatten)]
    pub program: ProgramArgs,
    /// Execution options.
    #[command(flatten)]
    pub exec: ExecArgs,
    /// Steps and initial values.
    #[command(flatten)]
    pub start: StartArgs,
    /// Write a field after the run; the format follows the extension (.npy, .png, .vti).
    /// Without `FIELD=`: the first field the step updates.
    #[arg(long = "output", value_parser = parse_field_file, value_name = "FIELD=FILE")]
    pub outputs: Vec<FieldFile>,
    /// Write a picture of a field after the run.
    #[arg(long = "png", value_parser = parse_field_file, value_name = "FIELD=FILE")]
    pub pngs: Vec<FieldFile>,
    /// Write a field as VTK image data (ParaView) after the run.
    #[arg(long = "vti", value_parser = parse_field_file, value_name = "FIELD=FILE")]
    pub vtis: Vec<FieldFile>,
    /// Fail if a floating-point field holds NaN or infinity after the run.
    #[arg(long)]
    pub check_finite: bool,
    /// With --check-finite: check every K steps, to find the first step that went wrong.
    #[arg(long, value_parser = at_least_one, value_name = "K", requires = "check_finite")]
    pub check_every: Option<usize>,
    /// Write every evaluation of every reduction to a CSV file: `step,name,value`, one row per
    /// evaluation in the order they were computed (integer reductions as integers).
    #[arg(long, value_name = "FILE")]
    pub reductions: Option<PathBuf>,
    /// Print the run's summary as one JSON object, every reduction evaluation included,
    /// instead of the summary line.
    #[arg(long)]
    pub json: bool,
    /// Write a checkpoint (every field, the reductions' state, the step counter) into this
    /// directory every `--checkpoint-every` steps; the previous one stays valid until the new
    /// one is complete.
    #[arg(long, value_name = "DIR", requires = "checkpoint_every")]
    pub checkpoint: Option<PathBuf>,
    /// With --checkpoint: steps between checkpoints.
    #[arg(long, value_parser = at_least_one, value_name = "N", requires = "checkpoint")]
    pub checkpoint_every: Option<usize>,
    /// Continue the run from the newest checkpoint in this directory, up to `--steps` steps in
    /// all (the steps it had done count); `--input` is not allowed beside it.
    #[arg(long, value_name = "DIR", conflicts_with = "inputs")]
    pub restart: Option<PathBuf>,
    /// The ranks the grid is cut into.
    #[command(flatten)]
    pub ranks: RankArgs,
}

/// How a run is cut into ranks (`run`, `bench`).
#[derive(Debug, Args)]
pub struct RankArgs {
    /// Cut the grid into ranks: `2x2` (ranks per axis, slowest first) or a count spread over
    /// every axis but the fastest. Under `mpirun` one rank per process (the default is the
    /// job's size); otherwise every rank runs in this process.
    #[arg(long, value_parser = parse_ranks, value_name = "RANKS")]
    pub ranks: Option<RanksSpec>,
    /// With ranks: steps between halo exchanges (the halos are that many steps deep). Default:
    /// the plan's time tile, or less where the rank boxes are thinner than its halo.
    #[arg(long, value_parser = at_least_one, value_name = "T")]
    pub exchange_every: Option<usize>,
    /// With ranks: each rank first computes the boundary strips its neighbours need, sends
    /// them, and computes its box while they fly. `auto`: under MPI where the strips add at
    /// most 10 % to a rank's points.
    #[arg(long, value_enum, default_value_t = Overlap::Auto)]
    pub overlap: Overlap,
}

/// An `--overlap` value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Overlap {
    /// Under MPI where the boundary strips are cheap.
    Auto,
    /// Always (also every rank in one process, which only checks it).
    On,
    /// Never: exchange after each pass.
    Off,
}

/// A `--ranks` value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RanksSpec {
    /// This many ranks, spread over the axes.
    Count(usize),
    /// Ranks per axis, slowest first.
    PerAxis(Vec<usize>),
}

/// Parses `--ranks`: `4` or `2x2`.
fn parse_ranks(text: &str) -> Result<RanksSpec, String> {
    let counts = (text.split('x'))
        .map(at_least_one)
        .collect::<Result<Vec<usize>, String>>()?;
    match counts.as_slice() {
        [one] => Ok(RanksSpec::Count(*one)),
        _ => Ok(RanksSpec::PerAxis(counts)),
    }
}

/// `tessera verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The program and its settings.
    #[command(flatten)]
    pub program: ProgramArgs,
    /// Execution options of the backend under test.
    #[command(flatten)]
    pub exec: ExecArgs,
    /// Steps and initial values.
    #[command(flatten)]
    pub start: StartArgs,
    /// Relative tolerance: a value agrees when |a - e| <= atol + rtol * |e| (default: 1e-4
    /// when the program has f32 fields, else 1e-6). Exact plans must match bitwise unless
    /// `--rtol` or `--atol` is given.
    #[arg(long, value_parser = non_negative, value_name = "X")]
    pub rtol: Option<f64>,
    /// Absolute tolerance (default: 1e-6 when the program has f32 fields, else 1e-12).
    #[arg(long, value_parser = non_negative, value_name = "Y")]
    pub atol: Option<f64>,
    /// The run under test on a grid cut into ranks (every rank in this process).
    #[command(flatten)]
    pub ranks: RankArgs,
}

/// Parses a number that is zero or more.
fn non_negative(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if v >= 0.0 && v.is_finite() => Ok(v),
        _ => Err(format!("`{text}` is not a number of at least 0")),
    }
}

/// `tessera emit`.
#[derive(Debug, Args)]
pub struct EmitArgs {
    /// The program and its settings.
    #[command(flatten)]
    pub program: ProgramArgs,
    /// Execution options (the backend defaults to `reference`, whose code is the IR; GPU code
    /// is planned for a typical device unless `--device` names one).
    #[command(flatten)]
    pub exec: ExecArgs,
    /// Print the program's IR (checked and elaborated: constants and functions inlined, every
    /// literal typed, every conversion explicit) instead of a backend's code; no plan is made.
    #[arg(long, conflicts_with_all = ["backend", "strategy", "plan"])]
    pub ir: bool,
    /// Write the code into this directory (as `<program>.<ext>`) instead of printing it.
    #[arg(short = 'o', long = "out-dir", value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
}

/// `tessera plan`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The program and its settings.
    #[command(flatten)]
    pub program: ProgramArgs,
    /// Execution options.
    #[command(flatten)]
    pub exec: ExecArgs,
    /// Print the plan as JSON, a plan file for `tessera run --plan`.
    #[arg(long)]
    pub json: bool,
}

/// `tessera bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// The program and its settings.
    #[command(flatten)]
    pub program: ProgramArgs,
    /// Execution options.
    #[command(flatten)]
    pub exec: ExecArgs,
    /// Time steps per run (default: the program's `steps`, else 1).
    #[arg(long, value_name = "N")]
    pub steps: Option<u64>,
    /// Timed runs (after one warm-up run).
    #[arg(long, default_value_t = 5, value_parser = at_least_one, value_name = "R")]
    pub reps: usize,
    /// Seed of the random inputs.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Memory bandwidth in GB/s for the roofline, instead of measuring it.
    #[arg(long, value_name = "GB/s", value_parser = positive)]
    pub bandwidth: Option<f64>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Only compile: print the compile time and the generated source's size, run nothing
    /// (cold only with an empty kernel cache: `TESSERA_CACHE_DIR=$(mktemp -d)`).
    #[arg(long)]
    pub compile_only: bool,
    /// The ranks the grid is cut into.
    #[command(flatten)]
    pub ranks: RankArgs,
}

/// `tessera explain`.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The program and its settings.
    #[command(flatten)]
    pub program: ProgramArgs,
    /// Execution options.
    #[command(flatten)]
    pub exec: ExecArgs,
    /// Memory bandwidth in GB/s for the roofline, instead of measuring it.
    #[arg(long, value_name = "GB/s", value_parser = positive)]
    pub bandwidth: Option<f64>,
}

/// `tessera tune`.
#[derive(Debug, Args)]
pub struct TuneArgs {
    /// The program (`*.tess`).
    #[arg(required_unless_present = "list")]
    pub program: Option<PathBuf>,
    /// Set a parameter or replace a type alias: `--set N=1024`, `--set real=f64`.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub sets: Vec<String>,
    #[arg(long, env = "TESSERA_BACKEND", value_name = "B", help = backend_help())]
    pub backend: Option<String>,
    /// Search only plans of this strategy.
    #[arg(long, value_parser = strategy_parser(), value_name = "S")]
    pub strategy: Option<Strategy>,
    /// Tune plans for exact (bitwise-reproducible) arithmetic; `run --exact` uses them.
    #[arg(long)]
    pub exact: bool,
    /// Device for GPU backends (`platform:device` or an index).
    #[arg(long, value_name = "D")]
    pub device: Option<String>,
    /// Stop starting candidates after this long: `60s`, `2m`, `500ms`.
    #[arg(long, default_value = "60s", value_parser = parse_budget, value_name = "TIME")]
    pub budget: Duration,
    /// Time steps per timed run (default: the program's `steps`, else 1).
    #[arg(long, value_parser = at_least_one_u64, value_name = "N")]
    pub steps: Option<u64>,
    /// Timed runs per candidate (after one warm-up run); the median counts.
    #[arg(long, default_value_t = 5, value_parser = at_least_one, value_name = "R")]
    pub reps: usize,
    /// Stop after timing this many candidates.
    #[arg(long, default_value_t = 200, value_parser = at_least_one, value_name = "N")]
    pub max_candidates: usize,
    /// Time candidates at other sizes than the program's (`--tune-size N=512`); the best plan
    /// is then planned and stored for the program's own size.
    #[arg(long = "tune-size", value_name = "NAME=VALUE")]
    pub tune_sizes: Vec<String>,
    /// Seed of the random inputs.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Plans shown in the final table.
    #[arg(long, default_value_t = 5, value_parser = at_least_one, value_name = "K")]
    pub top: usize,
    /// List the tuning database's entries instead of tuning.
    #[arg(long, conflicts_with_all = ["program", "forget"])]
    pub list: bool,
    /// Remove every tuned plan of PROGRAM (any size, backend or device) instead of tuning.
    #[arg(long)]
    pub forget: bool,
}

/// Parses a step count that must be at least 1.
fn at_least_one_u64(text: &str) -> Result<u64, String> {
    at_least_one(text).map(|n| n as u64)
}
