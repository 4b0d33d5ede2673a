//! Ingestion parsers, chunking, filters and intake's pattern matching from arbitrary text.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sleuth_actors::fuzzing::inputs(data));
