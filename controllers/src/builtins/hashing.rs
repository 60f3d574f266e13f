//! Stable hashes: the `pod-template-hash` label and the kubelet-lite's delays.
//!
//! Both must be the same on every machine, toolchain and run, so they use FNV-1a (specified bit
//! for bit, and what the real deployment controller hashes templates with) rather than std's
//! hashers, which promise no stable output.

const FNV64_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV64_PRIME: u64 = 0x0000_0100_0000_01b3;
const FNV32_OFFSET: u32 = 0x811c_9dc5;
const FNV32_PRIME: u32 = 0x0100_0193;

/// FNV-1a, 64 bits.
pub fn fnv64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(FNV64_OFFSET, |hash, byte| (hash ^ u64::from(*byte)).wrapping_mul(FNV64_PRIME))
}

/// FNV-1a, 32 bits (the deployment controller's `ComputeHash`).
pub fn fnv32(bytes: &[u8]) -> u32 {
    bytes.iter().fold(FNV32_OFFSET, |hash, byte| (hash ^ u32::from(*byte)).wrapping_mul(FNV32_PRIME))
}

/// The alphabet of apimachinery's `rand.SafeEncodeString`: no vowels (no words) and no
/// look-alike characters.
const SAFE_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// `rand.SafeEncodeString(fmt.Sprint(hash))`: each decimal digit of `hash` mapped into the safe
/// alphabet, as the `pod-template-hash` label is spelled.
pub fn safe_encode(hash: u32) -> String {
    hash.to_string()
        .bytes()
        .map(|digit| char::from(SAFE_ALPHABET[usize::from(digit) % SAFE_ALPHABET.len()]))
        .collect()
}

/// A duration in `[lo_ms, hi_ms]` drawn from `key` (a uid: itself drawn from the run's seed).
pub fn delay_ms(key: &str, salt: &str, lo_ms: u64, hi_ms: u64) -> std::time::Duration {
    let mut bytes = Vec::with_capacity(key.len() + salt.len() + 1);
    bytes.extend_from_slice(key.as_bytes());
    bytes.push(0);
    bytes.extend_from_slice(salt.as_bytes());
    let span = hi_ms.saturating_sub(lo_ms) + 1;
    std::time::Duration::from_millis(lo_ms + fnv64(&bytes) % span)
}
