//! Integration tests of `mc-config`: real files on disk, layered and screened.

// Marks the whole harness as test code, so fixtures may unwrap like tests do.
#![cfg(test)]

mod layering;
mod workspaces;
