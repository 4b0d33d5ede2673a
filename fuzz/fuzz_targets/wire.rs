//! Every message type from arbitrary bytes (MessagePack unless the bytes start with `{`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sleuth_messages::fuzzing::wire(data));
