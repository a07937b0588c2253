//! C + OpenMP code for the CPU backend.
