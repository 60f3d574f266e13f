//! The tests of `controllers::builtins::hashing` (its former unit tests: the library has no test harness).

use controllers::builtins::hashing::*;

#[test]
fn fnv_hashes_match_the_published_test_vectors() {
    assert_eq!(fnv64(b""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(fnv64(b"a"), 0xaf63_dc4c_8601_ec8c);
    assert_eq!(fnv32(b"a"), 0xe40c_292c);
}

#[test]
fn safe_encode_maps_each_decimal_digit_into_the_safe_alphabet() {
    // Go maps the ASCII byte of each digit: '1' is 49, and 49 % 27 = 22, which is '5'.
    assert_eq!(safe_encode(1_234), "5678");
    assert_eq!(safe_encode(0), "4");
}

#[test]
fn delays_stay_within_their_bounds_and_repeat_for_the_same_key() {
    for key in ["a", "b", "0f3c"] {
        let d = delay_ms(key, "start", 100, 200);
        assert!((100..=200).contains(&d.as_millis()), "{d:?}");
        assert_eq!(d, delay_ms(key, "start", 100, 200));
    }
}
