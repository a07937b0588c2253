//! [`GpuExecutable`]: a program lowered, built and loaded on a [`GpuDevice`]; its runs
//! ([`GpuRun`]) upload the fields, run the schedule's passes (a fused pass at once, others
//! step by step, or as replayed recordings when every step does the same work) through the
//! host program, and download the fields, transfers timed apart from the device's loop.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use tessera_analysis::BoundProgram;
use tessera_analysis::region::Rect;
use tessera_codegen::kernel::{
    BufferRole, GpuPlan, HostOp, KernelProgram, LaunchArg, ReceiverGather,
};
use tessera_ir::{Id, Receiver, ScalarType};
use tessera_plan::Plan;
use tessera_runtime::boxes::{box_chunks, element_width, pack_box, unpack_box};
use tessera_runtime::reduce::RowPartials;
use tessera_runtime::{ActiveRun, BackendError, Buffer, Executable, FieldSet, Pass, RunTimes};

use crate::device::{BoundArg, GpuDevice};
use crate::host::{run_fused_pass, run_host_start, run_host_step};
use crate::plan::lower_for_device;
use crate::replay::{PassRecorder, StepRecorder};

/// A program lowered, built and loaded on one device of a GPU runtime.
pub struct GpuExecutable<D> {
    bound: BoundProgram,
    plan: Plan,
    program: KernelProgram,
    device: D,
    allocated: bool,
    /// Per buffer whose length comes with the run (input tables, receivers' points and
    /// values), by buffer id: its allocation and that allocation's capacity in bytes (a new
    /// one when a run needs more).
    run_sized: HashMap<usize, (usize, usize)>,
    /// Replays runs of steps when every step does the same work.
    step_recorder: Option<StepRecorder>,
    /// Replays fused passes when every pass of a depth does the same work.
    pass_recorder: Option<PassRecorder>,
    compile_time: Duration,
}

impl<D: GpuDevice> GpuExecutable<D> {
    /// Opens the device `selection` names, lowers `bound` under `gpu` (the GPU part of
    /// `plan`), checks the result against the device's limits and memory (before allocating
    /// anything) and builds the kernels.
    pub fn new(
        bound: &BoundProgram,
        plan: &Plan,
        gpu: &GpuPlan,
        selection: Option<&str>,
    ) -> Result<Self, BackendError> {
        gpu.check()?;
        let device = D::open(selection)?;
        let program = lower_for_device(bound, gpu, &device.limits())?;
        let source = D::source(&program);
        Self::loaded(bound, plan, program, &source, device)
    }

    /// Runs `program` (lowered from `bound`) with its kernels built from `source`, which must
    /// define them with the printed signatures: for tools and tests that alter generated code
    /// (the barrier-mutation test).
    pub fn from_source(
        bound: &BoundProgram,
        program: KernelProgram,
        source: &str,
        selection: Option<&str>,
    ) -> Result<Self, BackendError> {
        let plan = Plan::new(bound, D::backend_plan(program.plan.clone()));
        Self::loaded(bound, &plan, program, source, D::open(selection)?)
    }

    fn loaded(
        bound: &BoundProgram,
        plan: &Plan,
        program: KernelProgram,
        source: &str,
        mut device: D,
    ) -> Result<Self, BackendError> {
        let compile_time = device.load(&program, source)?;
        let step_recorder = StepRecorder::new(&program.host.step, program.host.buffers.len());
        let pass_recorder = program.host.fused.as_ref().and_then(PassRecorder::new);
        Ok(GpuExecutable {
            step_recorder,
            pass_recorder,
            bound: bound.clone(),
            plan: plan.clone(),
            program,
            device,
            allocated: false,
            run_sized: HashMap::new(),
            compile_time,
        })
    }

    /// The lowered program being run.
    pub fn kernel_program(&self) -> &KernelProgram {
        &self.program
    }

    /// The device it runs on.
    pub fn device(&self) -> &D {
        &self.device
    }

    /// The (field index, buffer id) of every field buffer, in field order.
    fn field_buffers(&self) -> Vec<(usize, usize)> {
        let mut buffers: Vec<(usize, usize)> = (self.program.host.buffers.iter().enumerate())
            .filter_map(|(id, b)| match b.role {
                BufferRole::Field { field } => Some((field.index(), id)),
                _ => None,
            })
            .collect();
        buffers.sort_unstable();
        buffers
    }

    /// The buffer ids holding field buffer `id`'s values where no stage writes: itself and
    /// the partners the host program's start copies it into.
    fn twins(&self, id: usize) -> Vec<usize> {
        let partners = (self.program.host.start.iter()).filter_map(|op| match op {
            HostOp::Copy { from, to } if from.0 == id => Some(to.0),
            _ => None,
        });
        std::iter::once(id).chain(partners).collect()
    }

    fn check_fields(&self, fields: &FieldSet) -> Result<(), BackendError> {
        if fields.shape != self.program.extents {
            return Err(BackendError::InvalidOptions(format!(
                "the fields have shape {:?}, the program was prepared for {:?}",
                fields.shape, self.program.extents
            )));
        }
        for (field, id) in self.field_buffers() {
            let decl = &self.program.host.buffers[id];
            match fields.buffers.get(field) {
                Some(b) if b.ty() == decl.ty && b.len() == decl.len => {}
                _ => {
                    return Err(BackendError::InvalidOptions(format!(
                        "field `{}` is missing or has the wrong type or size",
                        decl.name
                    )));
                }
            }
        }
        Ok(())
    }

    /// Allocates every buffer of the host program, once per executable (one element of a
    /// buffer whose length comes with the run, until a run brings its values).
    fn allocate(&mut self) -> Result<(), BackendError> {
        if !self.allocated {
            for (id, decl) in self.program.host.buffers.iter().enumerate() {
                let bytes = decl.len.max(1) * decl.ty.size_bytes();
                let allocation = self.device.allocate(&decl.name, bytes)?;
                if decl.len == 0 {
                    self.run_sized.insert(id, (allocation, bytes));
                }
            }
            self.allocated = true;
        }
        Ok(())
    }

    /// An allocation of at least `bytes` bytes for buffer `id`, whose length comes with the
    /// run: the one it has when it is large enough, else a new one.
    fn run_sized_allocation(&mut self, id: usize, bytes: usize) -> Result<usize, BackendError> {
        match self.run_sized.get(&id) {
            Some(&(allocation, capacity)) if capacity >= bytes => Ok(allocation),
            _ => {
                let name = &self.program.host.buffers[id].name;
                let allocation = self.device.allocate(name, bytes)?;
                self.run_sized.insert(id, (allocation, bytes));
                Ok(allocation)
            }
        }
    }

    /// Uploads the run's input tables, each into an allocation large enough for it (a new one
    /// when the previous is too small), and binds their buffers to those allocations.
    fn upload_tables(
        &mut self,
        fields: &FieldSet,
        bindings: &mut [usize],
    ) -> Result<(), BackendError> {
        let table_buffers =
            (self.program.host.buffers.iter().enumerate()).filter_map(|(id, b)| match b.role {
                BufferRole::Table { table } => Some((table.index(), id)),
                _ => None,
            });
        let table_buffers: Vec<(usize, usize)> = table_buffers.collect();
        for (table, id) in table_buffers {
            let data = (fields.tables.get(table))
                .ok_or_else(|| {
                    BackendError::InvalidOptions("an input table is missing from the run".into())
                })?
                .as_bytes();
            let allocation = self.run_sized_allocation(id, data.len())?;
            self.device.upload(allocation, 0, data)?;
            bindings[id] = allocation;
        }
        Ok(())
    }

    /// Uploads a receiver's points (linear indices in the index type) and binds its points
    /// and values buffers to allocations large enough for them.
    fn upload_points(
        &mut self,
        gather: &ReceiverGather,
        points: &[usize],
        bindings: &mut [usize],
    ) -> Result<(), BackendError> {
        // The lowering's index type holds every linear index of the grid.
        let indices: Buffer = match self.program.index_ty {
            ScalarType::I32 => (points.iter().map(|&p| p as i32).collect::<Vec<_>>()).into(),
            _ => (points.iter().map(|&p| p as i64).collect::<Vec<_>>()).into(),
        };
        let allocation = self.run_sized_allocation(gather.points.0, indices.as_bytes().len())?;
        self.device.upload(allocation, 0, indices.as_bytes())?;
        bindings[gather.points.0] = allocation;
        let field = &self.bound.program().receivers[gather.receiver].field;
        let bytes = points.len() * self.bound.program().fields[*field].ty.size_bytes();
        bindings[gather.values.0] = self.run_sized_allocation(gather.values.0, bytes)?;
        Ok(())
    }
}

impl<D: GpuDevice> Executable for GpuExecutable<D> {
    fn program(&self) -> &BoundProgram {
        &self.bound
    }

    fn plan(&self) -> &Plan {
        &self.plan
    }

    fn describe(&self) -> String {
        format!(
            "{} {} on {}",
            D::BACKEND,
            self.program.plan.describe(),
            self.device.label()
        )
    }

    fn compile_time(&self) -> Duration {
        self.compile_time
    }

    fn start<'a>(
        &'a mut self,
        fields: &'a mut FieldSet,
    ) -> Result<Box<dyn ActiveRun + 'a>, BackendError> {
        self.check_fields(fields)?;
        self.allocate()?;
        let field_buffers = self.field_buffers();
        let uploads = Instant::now();
        for &(field, id) in &field_buffers {
            self.device
                .upload(id, 0, fields.buffers[field].as_bytes())?;
        }
        let mut bindings: Vec<usize> = (0..self.program.host.buffers.len()).collect();
        run_host_start(&self.program, &mut self.device, &mut bindings)?;
        self.upload_tables(fields, &mut bindings)?;
        let transfer = uploads.elapsed();
        self.device.start_timing()?;
        Ok(Box::new(GpuRun {
            bindings,
            field_buffers,
            executable: self,
            fields,
            transfer,
            upload_pending: false,
            points_uploaded: Vec::new(),
        }))
    }
}

/// A run on a GPU: the fields live on the device from `start` to `finish`.
pub struct GpuRun<'a, D> {
    executable: &'a mut GpuExecutable<D>,
    fields: &'a mut FieldSet,
    /// The allocation bound to each buffer id (swaps exchange entries).
    bindings: Vec<usize>,
    /// The (field index, buffer id) of every field buffer.
    field_buffers: Vec<(usize, usize)>,
    /// Time spent moving fields so far.
    transfer: Duration,
    /// The fields were lent writable: upload them before the next pass.
    upload_pending: bool,
    /// The receivers whose points are on the device for this run.
    points_uploaded: Vec<Id<Receiver>>,
}

impl<D: GpuDevice> GpuRun<'_, D> {
    /// Uploads the fields after they were lent writable, and runs the host program's start
    /// again (the copies that make twin buffers agree outside the written domains).
    fn upload_if_changed(&mut self) -> Result<(), BackendError> {
        if !std::mem::take(&mut self.upload_pending) {
            return Ok(());
        }
        let uploads = Instant::now();
        for &(field, id) in &self.field_buffers {
            let allocation = self.bindings[id];
            (self.executable.device).upload(
                allocation,
                0,
                self.fields.buffers[field].as_bytes(),
            )?;
        }
        let executable = &mut *self.executable;
        run_host_start(
            &executable.program,
            &mut executable.device,
            &mut self.bindings,
        )?;
        self.transfer += uploads.elapsed();
        Ok(())
    }

    /// Copies every field from the device into the host fields (unless the host fields,
    /// lent writable, are newer: they are uploaded at the next pass).
    fn download_fields(&mut self) -> Result<(), BackendError> {
        if self.upload_pending {
            return Ok(());
        }
        let downloads = Instant::now();
        for &(field, id) in &self.field_buffers {
            let allocation = self.bindings[id];
            self.executable.device.download(
                allocation,
                0,
                self.fields.buffers[field].as_bytes_mut(),
            )?;
        }
        self.transfer += downloads.elapsed();
        Ok(())
    }

    /// Launches `gather` over its `n` points (uploaded) and reads the values back.
    fn gather(&mut self, gather: &ReceiverGather, n: usize) -> Result<Buffer, BackendError> {
        let ty = self.executable.program.host.buffers[gather.values.0].ty;
        let mut values = Buffer::zeros(ty, n);
        if n == 0 {
            return Ok(values);
        }
        let count = i64::try_from(n)
            .map_err(|_| BackendError::InvalidOptions(format!("{n} receiver points")))?;
        let args = (gather.launch.args.iter())
            .map(|arg| match arg {
                LaunchArg::Buffer(id) => BoundArg::Allocation(self.bindings[id.0]),
                _ => BoundArg::Int(count),
            })
            .collect::<Vec<_>>();
        let mut launch = gather.launch.clone();
        launch.grid[0] = (n as u64).div_ceil(u64::from(launch.block[0]));
        let device = &mut self.executable.device;
        device.launch(&launch, &args)?;
        device.download(self.bindings[gather.values.0], 0, values.as_bytes_mut())?;
        Ok(values)
    }
}

impl<D: GpuDevice> ActiveRun for GpuRun<'_, D> {
    fn run_pass(&mut self, pass: &Pass) -> Result<Vec<RowPartials>, BackendError> {
        self.upload_if_changed()?;
        let executable = &mut *self.executable;
        if pass.reductions.is_empty() {
            if let Some(recorder) = executable.pass_recorder.as_mut() {
                recorder.run(&mut executable.device, &mut self.bindings, pass.steps)?;
                return Ok(Vec::new());
            }
            if let Some(fused) = executable.program.host.fused.as_ref() {
                run_fused_pass(
                    fused,
                    &mut executable.device,
                    &mut self.bindings,
                    pass.first_step,
                    pass.steps,
                )?;
                return Ok(Vec::new());
            }
        }
        let mut first = pass.first_step;
        if let Some(recorder) =
            (executable.step_recorder.as_mut()).filter(|_| pass.reductions.is_empty())
        {
            first +=
                recorder.run_recorded(&mut executable.device, &mut self.bindings, pass.steps)?;
        }
        let mut computed = Vec::new();
        for t in first..=pass.last_step() {
            computed = run_host_step(
                &executable.program,
                &mut executable.device,
                &mut self.bindings,
                t,
            )?;
        }
        pass.reductions
            .iter()
            .map(|r| {
                computed
                    .iter()
                    .find(|(id, _)| id == r)
                    .map(|(_, partials)| partials.clone())
                    .ok_or_else(|| {
                        BackendError::Runtime(format!(
                            "internal error: the host program read back no value of reduction {} at step {}",
                            r.index(),
                            pass.last_step()
                        ))
                    })
            })
            .collect()
    }

    fn until_holds(&mut self, latest: &[Option<f64>]) -> Result<bool, BackendError> {
        tessera_reference::until_holds(&self.executable.bound, latest)
    }

    fn fields(&mut self) -> Result<&FieldSet, BackendError> {
        self.download_fields()?;
        Ok(self.fields)
    }

    fn fields_mut(&mut self) -> Result<&mut FieldSet, BackendError> {
        self.download_fields()?;
        self.upload_pending = true;
        Ok(self.fields)
    }

    /// Reads only the box's bytes from the device (one transfer per contiguous range).
    fn read_box(&mut self, rect: &Rect) -> Result<Vec<u8>, BackendError> {
        if self.upload_pending {
            return Ok(pack_box(self.fields, rect));
        }
        let clock = Instant::now();
        let mut out = Vec::new();
        for &(field, id) in &self.field_buffers {
            let width = element_width(&self.fields.buffers[field]);
            for (offset, len) in box_chunks(rect, &self.fields.shape, width) {
                let start = out.len();
                out.resize(start + len, 0);
                let allocation = self.bindings[id];
                (self.executable.device).download(allocation, offset, &mut out[start..])?;
            }
        }
        self.transfer += clock.elapsed();
        Ok(out)
    }

    /// Writes only the box's bytes to the device, into every twin buffer of each field (they
    /// must agree where no stage writes, as the host program's start left them).
    fn write_box(&mut self, rect: &Rect, bytes: &[u8]) -> Result<(), BackendError> {
        if self.upload_pending {
            unpack_box(bytes, self.fields, rect);
            return Ok(());
        }
        let clock = Instant::now();
        let mut at = 0;
        for &(field, id) in &self.field_buffers {
            let width = element_width(&self.fields.buffers[field]);
            let chunks = box_chunks(rect, &self.fields.shape, width);
            for twin in self.executable.twins(id) {
                let allocation = self.bindings[twin];
                let mut from = at;
                for &(offset, len) in &chunks {
                    let data = &bytes[from..from + len];
                    (self.executable.device).upload(allocation, offset, data)?;
                    from += len;
                }
            }
            at += chunks.iter().map(|(_, len)| len).sum::<usize>();
        }
        self.transfer += clock.elapsed();
        Ok(())
    }

    fn sample(&mut self, receiver: Id<Receiver>, points: &[usize]) -> Result<Buffer, BackendError> {
        let gather = (self.executable.program.host.receivers.iter())
            .find(|g| g.receiver == receiver)
            .cloned()
            .ok_or_else(|| {
                BackendError::Runtime(format!(
                    "internal error: receiver {} has no gather kernel",
                    receiver.index()
                ))
            })?;
        if !self.points_uploaded.contains(&receiver) {
            self.executable
                .upload_points(&gather, points, &mut self.bindings)?;
            self.points_uploaded.push(receiver);
        }
        self.gather(&gather, points.len())
    }

    fn finish(mut self: Box<Self>) -> Result<RunTimes, BackendError> {
        let compute = self.executable.device.stop_timing()?;
        self.download_fields()?;
        Ok(RunTimes {
            compute: Some(compute),
            transfer: self.transfer,
            ranks: Vec::new(),
        })
    }
}
