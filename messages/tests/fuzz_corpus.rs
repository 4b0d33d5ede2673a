//! CI's smoke run of the wire fuzz targets (`fuzz/`): every file of their committed corpus (seeds, what
//! `cargo fuzz` kept, and every crash it found, as regression inputs) goes through the target, then 10,000
//! mutations of them (byte flips, truncations, insertions from a fixed seed).

use std::path::PathBuf;

use sleuth_messages::fuzzing::{wire, wire_json};

fn corpus(target: &str) -> Vec<Vec<u8>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus").join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("the fuzz corpus {} is part of the repository: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let inputs: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
    assert!(!inputs.is_empty(), "{} is empty", dir.display());
    inputs
}

/// xorshift64*: the same mutations on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(rng: &mut Rng, seed: &[u8]) -> Vec<u8> {
    let mut out = seed.to_vec();
    for _ in 0..1 + rng.below(4) {
        match rng.below(4) {
            0 if !out.is_empty() => {
                let i = rng.below(out.len());
                out[i] ^= 1 << rng.below(8);
            }
            1 if !out.is_empty() => out.truncate(rng.below(out.len())),
            2 => {
                let i = rng.below(out.len() + 1);
                out.insert(i, rng.next() as u8);
            }
            _ if !out.is_empty() => {
                let i = rng.below(out.len());
                out[i] = [0x00, 0xff, 0xc0, 0xdc, 0xde, b'"', b'{', b'['][rng.below(8)];
            }
            _ => {}
        }
    }
    out
}

fn smoke(target: &str, run: fn(&[u8])) {
    let seeds = corpus(target);
    for input in &seeds {
        run(input);
    }
    let mut rng = Rng(0x005e_ed0f_f022);
    for _ in 0..10_000 {
        let seed = &seeds[rng.below(seeds.len())];
        run(&mutate(&mut rng, seed));
    }
}

#[test]
fn the_wire_corpus_and_its_mutations_decode_without_panicking() {
    smoke("wire", wire);
}

#[test]
fn the_json_corpus_and_its_mutations_decode_without_panicking() {
    smoke("wire_json", wire_json);
}
