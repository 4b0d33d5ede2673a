//! the sleuth binary
fn main() {}
