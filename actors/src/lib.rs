//! sleuth actors
