//! The C-family printer shared by the C, CUDA and OpenCL back ends.
