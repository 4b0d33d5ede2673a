//! CI's smoke run of the `inputs` fuzz target (`fuzz/`): every file of its committed corpus goes through the
//! ingestion parsers, chunking, filters and intake, then 5,000 mutations of them from a fixed seed.

use std::path::PathBuf;

use sleuth_actors::fuzzing::inputs;

#[test]
fn the_inputs_corpus_and_its_mutations_parse_without_panicking() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/inputs");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("the fuzz corpus {} is part of the repository: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let seeds: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
    assert!(!seeds.is_empty());
    for seed in &seeds {
        inputs(seed);
    }
    // xorshift64*, and byte-level mutations that keep most of the text valid UTF-8 often enough to matter.
    let mut state = 0x1a2b_3c4d_5e6f_u64;
    let mut next = move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    let specials = ["\"", "{", "}", "[", "\n", "# ", "é", "日本", "\\u0000", ":", ",", " of the ", "'s "];
    for _ in 0..5_000 {
        let mut text = String::from_utf8_lossy(&seeds[(next() % seeds.len() as u64) as usize]).to_string();
        for _ in 0..1 + next() % 4 {
            let boundaries: Vec<usize> = (0..=text.len()).filter(|i| text.is_char_boundary(*i)).collect();
            let at = boundaries[(next() % boundaries.len() as u64) as usize];
            match next() % 3 {
                0 => text.insert_str(at, specials[(next() % specials.len() as u64) as usize]),
                1 => text.truncate(at),
                _ => {
                    let end = boundaries[(next() % boundaries.len() as u64) as usize].max(at);
                    text.replace_range(at..end, "");
                }
            }
        }
        inputs(text.as_bytes());
    }
}
