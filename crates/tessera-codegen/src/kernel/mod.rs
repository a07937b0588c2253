//! The GPU kernel IR, strategies lowering stencil programs into it, and the CUDA/OpenCL printers.
