//! CPU plans: strategies and tile parameters for the generated-C backend.
