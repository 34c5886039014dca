//! CLI tests of `launch` (with fake sbatch on PATH for error paths).
