//! Every message type from arbitrary JSON text.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sleuth_messages::fuzzing::wire_json(data));
