//! [`PlanError`]: the one error type of planning, for every backend. Each variant names what
//! is wrong, the value and the limit, and what to change.

use std::fmt;

/// Why a request cannot be planned, or a plan cannot run a program on a backend or device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlanError {
    /// A request or plan parameter is invalid for this program (the message says which, why,
    /// and what to use instead).
    Invalid(String),
    /// A field of a plan holds a value the program, backend or device cannot take.
    Field {
        /// The field's path in the plan, as in its JSON (`cpu.tile[1]`, `opencl.block`).
        field: String,
        /// The value it holds.
        value: String,
        /// What it must be, and why.
        limit: String,
    },
    /// A strategy the backend does not have.
    UnknownStrategy {
        /// The backend.
        backend: &'static str,
        /// The strategy asked for.
        strategy: String,
        /// The backend's strategies.
        choices: Vec<&'static str>,
    },
    /// A plan file that cannot be read as a plan (syntax, unknown or missing fields, types).
    Format(String),
    /// A size parameter is zero.
    Zero {
        /// Which parameter.
        what: String,
    },
    /// A block has more threads than the device allows.
    Threads {
        /// Kernel name.
        kernel: String,
        /// The block shape (x, y, z).
        block: [u32; 3],
        /// The device's limit.
        max: u32,
        /// Device name.
        device: String,
    },
    /// A block is larger than the device allows along one axis.
    BlockShape {
        /// Kernel name.
        kernel: String,
        /// 0 = x, 1 = y, 2 = z.
        axis: usize,
        /// The block's size along it.
        size: u32,
        /// The device's limit.
        max: u32,
        /// Device name.
        device: String,
    },
    /// A launch needs more blocks along one axis than the device allows.
    Grid {
        /// Kernel name.
        kernel: String,
        /// 0 = x, 1 = y, 2 = z.
        axis: usize,
        /// Blocks needed.
        blocks: u64,
        /// The device's limit.
        max: u64,
    },
    /// A block needs more shared memory than the device gives one block.
    SharedMemory {
        /// Kernel name.
        kernel: String,
        /// Bytes needed.
        needs: usize,
        /// Bytes available per block.
        has: usize,
        /// Device name.
        device: String,
    },
    /// Not even one block fits in a multiprocessor's register file.
    Registers {
        /// Kernel name.
        kernel: String,
        /// Estimated registers per thread.
        registers: u32,
        /// Threads per block.
        threads: u64,
        /// Registers per multiprocessor.
        available: u32,
    },
    /// The buffers do not fit in device memory.
    DeviceMemory {
        /// Bytes needed.
        needs: u64,
        /// Bytes the device has.
        has: u64,
        /// Device name.
        device: String,
    },
    /// The plan asks for something the strategy cannot do (what, and what to use instead).
    Unsupported(String),
}

impl PlanError {
    /// A [`PlanError::Field`] error.
    pub fn field(
        field: impl Into<String>,
        value: impl fmt::Display,
        limit: impl Into<String>,
    ) -> Self {
        PlanError::Field {
            field: field.into(),
            value: value.to_string(),
            limit: limit.into(),
        }
    }
}

const AXES: [&str; 3] = ["x", "y", "z"];

fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlanError::Invalid(message)
            | PlanError::Unsupported(message)
            | PlanError::Format(message) => f.write_str(message),
            PlanError::Field {
                field,
                value,
                limit,
            } => write!(f, "plan field `{field}` is {value}, but {limit}"),
            PlanError::UnknownStrategy {
                backend,
                strategy,
                choices,
            } => write!(
                f,
                "the {backend} backend has no strategy `{strategy}`; choose one of: {}",
                choices.join(", ")
            ),
            PlanError::Zero { what } => write!(f, "{what} is 0; it must be at least 1"),
            PlanError::Threads {
                kernel,
                block,
                max,
                device,
            } => {
                let threads: u64 = block.iter().map(|&b| u64::from(b)).product();
                write!(
                    f,
                    "kernel `{kernel}`: a block of {}x{}x{} = {threads} threads exceeds the {max} threads per block of {device}; use a smaller block, e.g. {}",
                    block[0],
                    block[1],
                    block[2],
                    suggest_block(*block, u64::from(*max))
                )
            }
            PlanError::BlockShape {
                kernel,
                axis,
                size,
                max,
                device,
            } => write!(
                f,
                "kernel `{kernel}`: a block of {size} threads along {} exceeds the limit of {max} of {device}; use at most {max}",
                AXES[*axis]
            ),
            PlanError::Grid {
                kernel,
                axis,
                blocks,
                max,
            } => write!(
                f,
                "kernel `{kernel}` needs {blocks} blocks along {} but the device allows {max}; use a larger block or more elements per thread along that axis",
                AXES[*axis]
            ),
            PlanError::SharedMemory {
                kernel,
                needs,
                has,
                device,
            } => write!(
                f,
                "kernel `{kernel}`: the tile needs {needs} bytes of shared memory per block, but {device} gives a block {has} bytes; use a smaller block or fewer elements per thread (about {:.0}% of the current tile)",
                100.0 * *has as f64 / *needs as f64
            ),
            PlanError::Registers {
                kernel,
                registers,
                threads,
                available,
            } => write!(
                f,
                "kernel `{kernel}`: {threads} threads of about {registers} registers each exceed the {available} registers of a multiprocessor; use a smaller block"
            ),
            PlanError::DeviceMemory { needs, has, device } => write!(
                f,
                "the program needs {} of device memory, {device} has {}; use a smaller grid or another device",
                gib(*needs),
                gib(*has)
            ),
        }
    }
}

impl std::error::Error for PlanError {}

/// Halves the largest axes of `block` (x, y, z) until it holds at most `max` threads, and
/// writes it as a `--tile` value (slowest axis first).
fn suggest_block(mut block: [u32; 3], max: u64) -> String {
    while block.iter().map(|&b| u64::from(b)).product::<u64>() > max.max(1) {
        let largest = (0..3).max_by_key(|&a| (block[a], 3 - a)).unwrap_or(0);
        block[largest] = (block[largest] / 2).max(1);
    }
    match block {
        [x, 1, 1] => format!("--tile {x}"),
        [x, y, 1] => format!("--tile {y}x{x}"),
        [x, y, z] => format!("--tile {z}x{y}x{x}"),
    }
}
