//! The tests of `model_apiserver_http::wire` (its former unit tests: the library has no test harness).

use model_apiserver_http::wire::*;

#[test]
fn written_fields_read_back_in_order_and_empty_scalars_are_left_out() {
    let mut inner = Writer::new();
    inner.string(1, "apps");
    let mut w = Writer::new();
    w.string(1, "2.0").string(2, "").message(3, inner).bool(4, true).bool(5, false).int64(6, 300);
    w.double(7, 1.5).int64(8, -1);
    let bytes = w.finish();
    let read = fields(&bytes).expect("well formed");
    let numbers: Vec<u32> = read.iter().map(|(n, _)| *n).collect();
    assert_eq!(numbers, vec![1, 3, 4, 6, 7, 8]);
    assert_eq!(read[0].1, Field::Bytes(b"2.0"));
    assert_eq!(
        fields(match read[1].1 {
            Field::Bytes(b) => b,
            _ => panic!("a message is length-delimited"),
        })
        .expect("inner"),
        vec![(1, Field::Bytes(b"apps"))]
    );
    assert_eq!(read[3].1, Field::Varint(300));
    assert_eq!(read[4].1, Field::Fixed(1.5_f64.to_bits()));
    assert_eq!(read[5].1, Field::Varint(u64::MAX));
}

#[test]
fn a_truncated_message_is_an_error_not_a_panic() {
    assert!(fields(&[0x0a, 0x05, b'a']).is_err());
    assert!(fields(&[0x08]).is_err());
    assert!(fields(&[0x0b]).is_err());
}
