//! The proxy's screening of what a web page can send: arbitrary `Host`, `Origin` and
//! `Content-Type` bytes on a managed path never panic, and the answer keeps the rules
//! (`mc_proxy::check_screening` panics when it does not). The input is NUL-separated: the
//! path, then the three header values.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut parts = data.split(|&byte| byte == 0);
    let path = String::from_utf8_lossy(parts.next().unwrap_or_default()).into_owned();
    let mut headers: Vec<(&str, &[u8])> = Vec::new();
    for name in ["host", "origin", "content-type"] {
        if let Some(value) = parts.next() {
            headers.push((name, value));
        }
    }
    let _ = mc_proxy::check_screening(&path, &headers);
});
