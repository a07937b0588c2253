//! Bounded-time fuzzing as ordinary `cargo test`s on stable Rust.
//!
//! [`fuzz`] mutates corpus inputs with a seeded [`Mutator`] (bit flips, byte changes,
//! insertions, deletions, duplications, splices of other corpus inputs and of dictionary
//! words, truncation) and runs a check on each, for a budget of seconds and inputs:
//! `TESSERA_FUZZ_SECONDS` (default 10) and `TESSERA_FUZZ_INPUTS` (default unbounded);
//! `TESSERA_FUZZ_SEED` picks the seed (default 1). A check that panics, or that runs longer
//! than [`HANG_SECONDS`], fails the test after the input is saved to a file whose path, seed
//! and input number are printed, so that it can be replayed and kept as a regression test.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A check running longer than this on one input is a hang.
pub const HANG_SECONDS: u64 = 10;

/// What to fuzz: a name (for messages and saved files), the corpus, the dictionary of words
/// spliced into inputs (keywords, magic numbers) and the check to run on each input.
pub struct Target<'a> {
    /// Names the saved failing inputs: `NAME-SEED-INPUT.bin`.
    pub name: &'a str,
    /// Valid inputs to start from (at least one).
    pub corpus: Vec<Vec<u8>>,
    /// Words inserted into inputs.
    pub dictionary: &'a [&'a [u8]],
}

/// The budget of a run, from the environment.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Inputs at most.
    pub inputs: u64,
    /// The mutator's seed.
    pub seed: u64,
}

impl Budget {
    /// `TESSERA_FUZZ_SECONDS`, `TESSERA_FUZZ_INPUTS` and `TESSERA_FUZZ_SEED`, or 10 s,
    /// unbounded and 1.
    pub fn from_env() -> Budget {
        Budget {
            seconds: from_env("TESSERA_FUZZ_SECONDS", 10.0),
            inputs: from_env("TESSERA_FUZZ_INPUTS", u64::MAX),
            seed: from_env("TESSERA_FUZZ_SEED", 1),
        }
    }
}

/// The number in the environment variable `name`, or `default` when it is not set.
fn from_env<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(value) => value
            .parse()
            .unwrap_or_else(|_| panic!("{name} is `{value}`, not a number")),
        Err(_) => default,
    }
}

/// What a run did.
#[derive(Clone, Copy, Debug)]
pub struct Outcome {
    /// Inputs checked.
    pub inputs: u64,
    /// Seconds taken.
    pub seconds: f64,
}

/// Runs `check` on mutated inputs of `target` within `budget`; panics, naming the saved input,
/// when a check panics or hangs. The check runs on a worker thread.
pub fn fuzz(target: Target<'_>, budget: Budget, check: impl Fn(&[u8]) + Send + 'static) -> Outcome {
    assert!(
        !target.corpus.is_empty(),
        "{}: an empty corpus",
        target.name
    );
    let current = Arc::new(Mutex::new((0_u64, Vec::new())));
    let (done, finished) = mpsc::channel();
    let worker_input = Arc::clone(&current);
    let corpus = target.corpus.clone();
    let dictionary: Vec<Vec<u8>> = target.dictionary.iter().map(|w| w.to_vec()).collect();
    let start = Instant::now();
    std::thread::spawn(move || {
        let mut mutator = Mutator::new(budget.seed, corpus, dictionary);
        let mut number = 0;
        while number < budget.inputs && start.elapsed().as_secs_f64() < budget.seconds {
            let input = mutator.next_input();
            *worker_input.lock().unwrap_or_else(|e| e.into_inner()) = (number, input.clone());
            if catch_unwind(AssertUnwindSafe(|| check(&input))).is_err() {
                let _ = done.send(Err(number));
                return;
            }
            number += 1;
            let _ = done.send(Ok(number));
        }
        let _ = done.send(Ok(u64::MAX));
    });
    let mut inputs = 0;
    loop {
        match finished.recv_timeout(Duration::from_secs(HANG_SECONDS)) {
            Ok(Ok(u64::MAX)) => break,
            Ok(Ok(count)) => inputs = count,
            Ok(Err(_)) => fail(&target, budget, &current, "panicked"),
            Err(_) => fail(&target, budget, &current, "hung"),
        }
    }
    Outcome {
        inputs,
        seconds: start.elapsed().as_secs_f64(),
    }
}

/// Saves the input being checked and panics with where it is.
fn fail(target: &Target<'_>, budget: Budget, current: &Mutex<(u64, Vec<u8>)>, how: &str) -> ! {
    let (number, input) = current.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let dir = std::env::temp_dir().join("tessera-fuzz");
    let path: PathBuf = dir.join(format!("{}-{}-{number}.bin", target.name, budget.seed));
    let saved = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, &input));
    panic!(
        "fuzz target `{}` {how} on input {number} of seed {} (TESSERA_FUZZ_SEED={}); the input {}",
        target.name,
        budget.seed,
        budget.seed,
        match saved {
            Ok(()) => format!("is saved in {}", path.display()),
            Err(e) => format!("could not be saved ({e}): {input:?}"),
        }
    );
}

/// A seeded generator of mutated corpus inputs (xorshift64*; the same seed gives the same
/// inputs).
pub struct Mutator {
    state: u64,
    corpus: Vec<Vec<u8>>,
    dictionary: Vec<Vec<u8>>,
}

impl Mutator {
    /// A mutator of `corpus` (not empty) splicing in `dictionary` words, seeded by `seed`.
    pub fn new(seed: u64, corpus: Vec<Vec<u8>>, dictionary: Vec<Vec<u8>>) -> Mutator {
        Mutator {
            state: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
            corpus,
            dictionary,
        }
    }

    /// A corpus input with one to eight mutations applied.
    pub fn next_input(&mut self) -> Vec<u8> {
        let pick = self.below(self.corpus.len());
        let mut input = self.corpus[pick].clone();
        for _ in 0..1 + self.below(8) {
            self.mutate(&mut input);
        }
        input
    }

    fn mutate(&mut self, input: &mut Vec<u8>) {
        let at = self.below(input.len() + 1);
        let len = 1 + self.below(16).min(input.len().saturating_sub(at));
        let end = (at + len).min(input.len());
        match self.below(9) {
            0 if at < input.len() => input[at] ^= 1 << self.below(8),
            1 if at < input.len() => input[at] = self.interesting_byte(),
            2 => {
                let bytes: Vec<u8> = (0..len).map(|_| self.next() as u8).collect();
                input.splice(at..at, bytes);
            }
            3 => {
                input.drain(at..end);
            }
            4 => {
                let copy = input[at..end].to_vec();
                input.splice(at..at, copy);
            }
            5 => {
                let pick = self.below(self.corpus.len());
                let (from, more) = (self.below(self.corpus[pick].len() + 1), self.below(64));
                let other = &self.corpus[pick];
                let piece = other[from..(from + 1 + more).min(other.len())].to_vec();
                input.splice(at..end, piece);
            }
            6 if !self.dictionary.is_empty() => {
                let pick = self.below(self.dictionary.len());
                let word = self.dictionary[pick].clone();
                input.splice(at..at, word);
            }
            7 => input.truncate(at),
            _ => {
                let value = self.interesting_byte();
                input.splice(at..end, std::iter::repeat_n(value, len));
            }
        }
    }

    /// A byte at an edge: 0, 1, 0x7f, 0x80, 0xff or a random one.
    fn interesting_byte(&mut self) -> u8 {
        [0, 1, 0x7f, 0x80, 0xff, self.next() as u8][self.below(6)]
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn next(&mut self) -> u64 {
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        self.state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_inputs() {
        let corpus = vec![b"grid [8];".to_vec(), b"field u: f32;".to_vec()];
        let inputs = |seed| {
            let mut m = Mutator::new(seed, corpus.clone(), vec![b"stage".to_vec()]);
            (0..100).map(|_| m.next_input()).collect::<Vec<_>>()
        };
        assert_eq!(inputs(3), inputs(3));
        assert_ne!(inputs(3), inputs(4));
    }

    #[test]
    fn a_panicking_check_fails_with_the_saved_input() {
        let target = Target {
            name: "self-test",
            corpus: vec![b"abc".to_vec()],
            dictionary: &[],
        };
        let budget = Budget {
            seconds: 10.0,
            inputs: 1000,
            seed: 7,
        };
        let failure = catch_unwind(|| fuzz(target, budget, |_| panic!("boom")))
            .expect_err("the check panics");
        let message = failure.downcast_ref::<String>().expect("a message");
        assert!(
            message.contains("panicked on input 0 of seed 7"),
            "{message}"
        );
        let path = message.rsplit("saved in ").next().unwrap();
        assert!(std::path::Path::new(path).exists(), "{path}");
    }
}
