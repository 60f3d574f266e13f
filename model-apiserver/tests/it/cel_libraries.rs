//! Kubernetes' CEL libraries as rules call them (`model_apiserver::cel::evaluate`, the rules'
//! environment with no variables): each case is an expression that must hold, most of them
//! upstream's own examples (`k8s.io/apiserver/pkg/cel/library/*_test.go`), and each error case
//! the message a 422 cause would print before `evaluating rule:`.

use cel::Value;
use model_apiserver::cel::evaluate;

/// Every expression evaluates to `true`.
fn all_hold(expressions: &[&str]) {
    let failed: Vec<String> = expressions
        .iter()
        .filter_map(|e| match evaluate(e) {
            Ok(Value::Bool(true)) => None,
            other => Some(format!("{e}: {other:?}")),
        })
        .collect();
    assert!(failed.is_empty(), "these do not hold:\n{}", failed.join("\n"));
}

fn error_of(expression: &str) -> String {
    match evaluate(expression) {
        Err(e) => e,
        Ok(v) => panic!("{expression} evaluated to {v:?}"),
    }
}

#[test]
fn quantities_parse_compare_and_add_exactly_as_apimachinery() {
    all_hold(&[
        "isQuantity('20') && isQuantity('20M') && isQuantity('20Mi') && isQuantity('1.3G') && isQuantity('10000k')",
        "!isQuantity('20Mo') && !isQuantity('10Mm') && !isQuantity('200K') && !isQuantity('Three')",
        // A bare suffix is zero to apimachinery's scanner (library/quantity.go's doc comment says
        // `quantity('Mi')` errors; ParseQuantity's code reads an empty number as 0).
        "quantity('Mi') == quantity('0')",
        "!isQuantity('') && !isQuantity('1,3G') && !isQuantity('1 ')",
        "quantity('200M') == quantity('200M')",
        "quantity('200M') == quantity('0.2G') && quantity('0.2G') == quantity('200M')",
        "quantity('2M') == quantity('0.002G') && quantity('2000k') == quantity('2M')",
        "quantity('200M') != quantity('0.3G')",
        "quantity('1Ki') == quantity('1024') && quantity('1e3') == quantity('1k') && quantity('1E3') == quantity('1k')",
        "quantity('50M').isLessThan(quantity('50Mi')) && !quantity('100M').isLessThan(quantity('50M'))",
        "quantity('50Mi').isGreaterThan(quantity('50M')) && !quantity('50M').isGreaterThan(quantity('100M'))",
        "quantity('200M').compareTo(quantity('0.2G')) == 0",
        "quantity('50M').compareTo(quantity('50Mi')) == -1 && quantity('50Mi').compareTo(quantity('50M')) == 1",
        "quantity('50k').add(quantity('20')) == quantity('50.02k')",
        "!quantity('50k').add(20).isLessThan(quantity('50020'))",
        "quantity('50k').sub(quantity('20')) == quantity('49.98k')",
        "quantity('50k').sub(20) == quantity('49980')",
        "quantity('50k').mul(2) == quantity('100000')",
        "quantity('50k').add(20).sub(quantity('100k')).asInteger() == -49980",
        "quantity('50k').add(20).sub(quantity('100k')).sub(-50000).asInteger() == 20",
        "quantity('0.1').add(quantity('0.2')) == quantity('0.3')",
        "quantity('50k').asInteger() == 50000 && quantity('50').isInteger()",
        "!quantity('9999999999999999999999999999999999999G').isInteger() && !quantity('1.5').isInteger()",
        "quantity('50.703k').asApproximateFloat() == 50703.0",
        "sign(quantity('-1m')) == -1 && quantity('0').sign() == 0 && quantity('3').sign() == 1",
        // Finer than nano rounds up, away from zero; a binary quantity is capped at int64.
        "quantity('0.0000000001') == quantity('1n') && quantity('-0.0000000001') == quantity('-1n')",
        "quantity('0.0000000001Ki') == quantity('103n')",
        "quantity('8Ei').asInteger() == 9223372036854775807",
        "quantity('.5') == quantity('500m') && quantity('+1.') == quantity('1') && quantity('-0') == quantity('0')",
    ]);
}

#[test]
fn an_invalid_quantity_fails_with_apimachinerys_message() {
    assert_eq!(
        error_of("quantity('10Mo')"),
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    );
    assert_eq!(error_of("quantity('10Mm')"), "unable to parse quantity's suffix");
    assert_eq!(
        error_of("quantity('9999999999999999999999999999999999999G').asInteger()"),
        "cannot convert value to integer"
    );
}

#[test]
fn urls_parse_as_gos_net_url() {
    all_hold(&[
        "isURL('https://user:pass@example.com:80/path?query=val#fragment') && isURL('/absolute-path')",
        "!isURL('https://a:b:c/') && !isURL('../relative-path') && !isURL('') && !isURL('example.com')",
        "url('/path').getScheme() == '' && url('https://example.com/').getScheme() == 'https'",
        "url('HTTPS://example.com/').getScheme() == 'https'",
        "url('https://example.com:80/').getHost() == 'example.com:80' && url('https://example.com/').getHost() == 'example.com'",
        "url('https://[::1]:80/').getHost() == '[::1]:80' && url('https://[::1]/').getHost() == '[::1]' && url('/path').getHost() == ''",
        "url('https://example.com:80/').getHostname() == 'example.com' && url('https://127.0.0.1:80/').getHostname() == '127.0.0.1'",
        "url('https://[::1]:80/').getHostname() == '::1' && url('/path').getHostname() == ''",
        "url('https://example.com:80/').getPort() == '80' && url('https://example.com/').getPort() == ''",
        // Go keeps a default port, where a WHATWG parser drops it.
        "url('https://example.com:443/').getPort() == '443'",
        "url('https://example.com/path').getEscapedPath() == '/path' && url('https://example.com').getEscapedPath() == ''",
        "url('https://example.com/path with spaces/').getEscapedPath() == '/path%20with%20spaces/'",
        "url('https://example.com/a/../b').getEscapedPath() == '/a/../b'",
        "url('https://example.com/path?k1=a&k2=b&k2=c').getQuery() == {'k1': ['a'], 'k2': ['b', 'c']}",
        "url('https://example.com/path?key with spaces=value with spaces').getQuery() == {'key with spaces': ['value with spaces']}",
        "url('https://example.com/path?').getQuery() == {} && url('https://example.com/path').getQuery() == {}",
        "url('https://example.com/p?a=1#frag').getQuery() == {'a': ['1']}",
        "url('https://example.com/a') == url('https://example.com/a') && url('https://example.com/a') != url('https://example.com/b')",
    ]);
    assert_eq!(
        error_of("url('https://a:b:c/')"),
        "URL parse error during conversion from string: parse \"https://a:b:c/\": invalid port \":c\" after host"
    );
    assert_eq!(
        error_of("url('../relative-path')"),
        "URL parse error during conversion from string: parse \"../relative-path\": invalid URI for request"
    );
}

#[test]
fn ips_and_cidrs_parse_as_gos_netip_and_refuse_zones_and_mapped_addresses() {
    all_hold(&[
        "isIP('127.0.0.1') && isIP('::1') && !isIP('127.0.0.256') && !isIP(':::1')",
        "!isIP('127.0.0.01') && !isIP('fe80::1%eth0') && !isIP('::ffff:1.2.3.4') && !isIP('1.2.3')",
        "ip('127.0.0.1').family() == 4 && ip('::1').family() == 6",
        "ip('0.0.0.0').isUnspecified() && ip('::').isUnspecified() && !ip('::1').isUnspecified()",
        "ip('127.0.0.1').isLoopback() && ip('::1').isLoopback() && !ip('192.168.0.1').isLoopback()",
        "ip('224.0.0.1').isLinkLocalMulticast() && !ip('224.0.1.1').isLinkLocalMulticast()",
        "ip('ff02::1').isLinkLocalMulticast() && !ip('fd00::1').isLinkLocalMulticast()",
        "ip('169.254.169.254').isLinkLocalUnicast() && ip('fe80::1').isLinkLocalUnicast() && !ip('fd80::1').isLinkLocalUnicast()",
        "ip('192.168.0.1').isGlobalUnicast() && !ip('255.255.255.255').isGlobalUnicast()",
        "ip('2001:db8::abcd').isGlobalUnicast() && !ip('ff00::1').isGlobalUnicast()",
        "ip.isCanonical('127.0.0.1') && ip.isCanonical('2001:db8::abcd')",
        "!ip.isCanonical('2001:DB8::ABCD') && !ip.isCanonical('2001:db8::0:0:0:abcd')",
        "string(ip('2001:db8:0:0:1:0:0:1')) == '2001:db8::1:0:0:1' && ip('::1') == ip('0:0::1')",
        "isCIDR('192.168.0.0/16') && isCIDR('::1/128') && !isCIDR('192.168.0.0/33') && !isCIDR('::1/129')",
        "!isCIDR('192.168.0.0/') && !isCIDR('192.168.0.0/016') && !isCIDR('192.168.0.0')",
        "cidr('192.168.0.0/24').containsIP(ip('192.168.0.1')) && !cidr('192.168.0.0/24').containsIP(ip('192.168.1.1'))",
        "cidr('192.168.0.0/24').containsIP('192.168.0.1') && !cidr('192.168.0.0/24').containsIP('192.168.1.1')",
        "!cidr('2001:db8::/32').containsIP(ip('192.168.1.1'))",
        "cidr('192.168.0.0/24').containsCIDR(cidr('192.168.0.0/25')) && !cidr('192.168.0.0/24').containsCIDR(cidr('192.168.0.0/23'))",
        // Upstream's library test: a network inside, whatever its host bits (`Prefix.Overlaps`).
        "cidr('192.168.0.0/24').containsCIDR(cidr('192.168.0.1/32')) && !cidr('192.168.0.0/24').containsCIDR(cidr('192.169.0.1/32'))",
        "cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16') && !cidr('10.0.0.0/8').containsCIDR('2001:db8::/32')",
        "cidr('2001:db8::/32').containsCIDR('2001:db8::/33') && !cidr('2001:db8::/32').containsCIDR('2001:db8::/31')",
        "cidr('192.168.0.1/24').ip() == ip('192.168.0.1') && cidr('::1/128').ip().family() == 6",
        "cidr('192.168.0.1/24').masked() == cidr('192.168.0.0/24') && cidr('192.168.0.1/24') != cidr('192.168.0.0/24')",
        "cidr('192.168.0.0/16').prefixLength() == 16 && string(cidr('192.168.0.0/24')) == '192.168.0.0/24'",
    ]);
    assert_eq!(
        error_of("ip('127.0.0.256')"),
        "IP Address \"127.0.0.256\" parse error during conversion from string: ParseAddr(\"127.0.0.256\"): IPv4 field has value >255"
    );
    assert_eq!(
        error_of("ip('::ffff:1.2.3.4')"),
        "IPv4-mapped IPv6 address \"::ffff:1.2.3.4\" is not allowed"
    );
    assert_eq!(error_of("ip('fe80::1%eth0')"), "IP address \"fe80::1%eth0\" with zone value is not allowed");
    assert_eq!(
        error_of("cidr('192.168.0.0/')"),
        "network address parse error during conversion from string: network address parse error during conversion \
         from string: netip.ParsePrefix(\"192.168.0.0/\"): bad bits after slash: \"\""
    );
}

#[test]
fn named_formats_validate_with_apimachinerys_messages() {
    all_hold(&[
        "!format.dns1123Label().validate('my-label-name').hasValue()",
        "format.dns1123Label().validate('My_Name').hasValue()",
        "format.dns1123Label().validate('a.b').value() == ['must not contain dots']",
        "!format.dns1123Subdomain().validate('apiextensions.k8s.io').hasValue()",
        "!format.dns1035Label().validate('my-label-name').hasValue() && format.dns1035Label().validate('1abc').hasValue()",
        "!format.qualifiedName().validate('apiextensions.k8s.io/v1beta1').hasValue()",
        "!format.dns1123LabelPrefix().validate('my-label-prefix-').hasValue()",
        "format.dns1123Label().validate('my-label-prefix-').hasValue()",
        "!format.dns1123SubdomainPrefix().validate('mysubdomain.prefix.-').hasValue()",
        "!format.labelValue().validate('').hasValue() && format.labelValue().validate('-x').hasValue()",
        "!format.uri().validate('http://example.com').hasValue() && format.uri().validate('example').hasValue()",
        "!format.uuid().validate('123e4567-e89b-12d3-a456-426614174000').hasValue()",
        "format.uuid().validate('123').value() == ['does not match the UUID format']",
        "!format.byte().validate('aGVsbG8=').hasValue() && format.byte().validate('!').value() == ['invalid base64']",
        "!format.date().validate('2021-01-01').hasValue() && format.date().validate('2021-02-30').value() == ['invalid date']",
        "!format.datetime().validate('2021-01-01T00:00:00Z').hasValue()",
        "format.datetime().validate('2021-01-01').value() == ['invalid datetime']",
        "format.named('dns1123Label').hasValue() && !format.named('noSuchFormat').hasValue()",
        "format.named('dns1123Label').value() == format.dns1123Label()",
        "format.named('dns1123Label').value().validate('x_y').hasValue()",
    ]);
    assert_eq!(
        evaluate("format.dns1123Label().validate('My_Name').value()[0]"),
        Ok(Value::String(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start \
             and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is \
             '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
                .to_owned()
                .into()
        ))
    );
}

#[test]
fn semvers_parse_and_order_as_blang_semver() {
    all_hold(&[
        "isSemver('1.0.0') && isSemver('0.1.0-alpha.1') && isSemver('1.0.0+build.1')",
        "!isSemver('hello') && !isSemver('v1.0') && !isSemver('1.0') && !isSemver('01.0.0')",
        "isSemver('v1.0', true) && semver('v1.0.0', true) == semver('1.0.0')",
        "semver('1.0', true) == semver('1.0.0') && semver('01.01.01', true) == semver('1.1.1')",
        "semver('1.2.3').major() == 1 && semver('1.2.3').minor() == 2 && semver('1.2.3').patch() == 3",
        "semver('1.2.3').compareTo(semver('1.2.3')) == 0 && semver('1.2.3').compareTo(semver('2.0.0')) == -1",
        "semver('1.2.3').compareTo(semver('0.1.2')) == 1",
        "semver('1.0.0-alpha').isLessThan(semver('1.0.0')) && semver('1.0.0-alpha.2').isLessThan(semver('1.0.0-alpha.10'))",
        "semver('1.0.0-alpha.1').isLessThan(semver('1.0.0-beta')) && semver('1.0.0-1').isLessThan(semver('1.0.0-a'))",
        "semver('2.0.0').isGreaterThan(semver('1.9.9')) && semver('1.0.0+a') == semver('1.0.0+b')",
    ]);
    assert_eq!(error_of("semver('Three')"), "No Major.Minor.Patch elements found");
    assert_eq!(error_of("semver('1.02.0')"), "Minor number must not contain leading zeroes \"02\"");
    assert_eq!(
        error_of("semver('1.0', true).major() == 1 && semver('1.0-rc', true) == semver('1.0.0')"),
        "short version cannot contain PreRelease/Build meta data"
    );
}

#[test]
fn list_regex_and_set_functions_stand_beside_the_strings_extension() {
    all_hold(&[
        "[1, 2, 3].isSorted() && ['a', 'b', 'b', 'c'].isSorted() && ![2.0, 1.0].isSorted() && [].isSorted()",
        "[1, 3].sum() == 4 && [1.0, 3.0].sum() == 4.0 && [].sum() == 0",
        "[duration('1m'), duration('1s')].sum() == duration('61s')",
        "[1, 3].min() == 1 && [1, 3].max() == 3 && ['b', 'a'].min() == 'a'",
        "[1, 2, 2, 3].indexOf(2) == 1 && ['a', 'b', 'b', 'c'].lastIndexOf('b') == 2",
        "[1.0].indexOf(1.1) == -1 && [].indexOf('string') == -1",
        // The strings extension's overloads, on a string receiver.
        "'abcb'.indexOf('b') == 1 && 'abcb'.lastIndexOf('b') == 3",
        "'abc 123'.find('[0-9]+') == '123' && 'abc 123'.find('xyz') == ''",
        "'123 abc 456'.findAll('[0-9]+') == ['123', '456'] && '123 abc 456'.findAll('[0-9]+', 1) == ['123']",
        "'123 abc 456'.findAll('xyz') == []",
        "sets.contains([1, 2, 3], [2, 3]) && !sets.contains([1], [2])",
        "sets.equivalent([1, 2], [2, 1, 1]) && sets.intersects([1, 2], [2, 5]) && !sets.intersects([1], [2])",
    ]);
    assert_eq!(error_of("[].min()"), "min called on empty list");
    assert!(error_of("'x'.find('(')").starts_with("Illegal regex: "));
}

#[test]
fn durations_and_timestamps_are_cels_standard_ones() {
    all_hold(&[
        "duration('1h30m') == duration('90m') && duration('1h') > duration('59m')",
        "timestamp('2024-01-01T00:00:00Z') < timestamp('2024-01-02T00:00:00Z')",
        "timestamp('2024-01-02T00:00:00Z') - timestamp('2024-01-01T00:00:00Z') == duration('24h')",
        "timestamp('2024-03-05T10:00:00Z').getFullYear() == 2024",
    ]);
}

#[test]
fn a_library_value_survives_as_a_value_and_keeps_its_equality() {
    assert!(matches!(evaluate("quantity('1k')"), Ok(Value::Opaque(_))));
    assert_eq!(evaluate("quantity('1k') == '1k'"), Ok(Value::Bool(false)));
    assert_eq!(evaluate("[quantity('1k')] == [quantity('1000')]"), Ok(Value::Bool(true)));
}

#[test]
fn a_string_that_is_not_a_number_fails_to_convert_in_cel_gos_words() {
    // Karpenter's `int(x.values[0]) >= 0` on `Gt ["a"]`: cel-go's `String.ConvertToType`.
    assert_eq!(error_of("int('a')"), "type conversion error from 'string' to 'int'");
    assert_eq!(error_of("int('99999999999999999999')"), "type conversion error from 'string' to 'int'");
    assert_eq!(error_of("uint('-1')"), "type conversion error from 'string' to 'uint'");
    assert_eq!(error_of("double('one')"), "type conversion error from 'string' to 'double'");
    all_hold(&["int('42') == 42 && uint('7') == 7u && double('2.5') == 2.5"]);
}

#[test]
fn a_logical_operator_whose_sides_both_fail_reports_the_first_sides_error_as_cel_go() {
    // cel-go's evalOr/evalAnd keep the first error; Gateway API's TLS rule `size(self.certificateRefs)
    // > 0 || size(self.options) > 0` on `tls: {}` names certificateRefs on kube-apiserver.
    let m = "{'a': 1}";
    assert_eq!(error_of(&format!("{m}.b > 0 || {m}.c > 0")), "no such key: b");
    assert_eq!(error_of(&format!("{m}.b > 0 && {m}.c > 0")), "no such key: b");
    assert_eq!(error_of(&format!("{m}.a == 2 || ({m}.b > 0 || {m}.c > 0)")), "no such key: b");
    assert_eq!(error_of(&format!("{m}.a == 1 ? ({m}.x > 0 || {m}.y > 0) : true")), "no such key: x");
    assert_eq!(error_of(&format!("!({m}.p > 0 && {m}.q > 0)")), "no such key: p");
    // A decisive side wins over an error beside it, either way round.
    all_hold(&[
        &format!("{m}.b > 0 || true"),
        &format!("true || {m}.b > 0"),
        &format!("!({m}.b > 0 && false)"),
        &format!("{m}.a == 1 || {m}.zz == 3"),
    ]);
}

#[test]
fn arithmetic_and_index_errors_read_as_cel_gos() {
    assert_eq!(error_of("1 / 0 == 1"), "division by zero");
    assert_eq!(error_of("1 % 0 == 1"), "modulus by zero");
    assert_eq!(error_of("9223372036854775807 + 1 == 0"), "integer overflow");
    assert_eq!(error_of("18446744073709551615u + 1u == 0u"), "unsigned integer overflow");
    assert_eq!(error_of("[1, 2][100] == 1"), "index out of bounds: 100");
}

#[test]
fn two_variable_comprehensions_bind_index_and_element_or_key_and_value() {
    // cel-go's ext.TwoVarComprehensions, in kube-apiserver's base environment since 1.32
    // (Kubernetes' TestValidationExpressions "list access" and "map access" rules).
    all_hold(&[
        "[1, 2, 3].all(i, e, e > 0 && i < 3)",
        "[1, 2, 3].exists(i, e, i == 2 && e == 3)",
        "[1, 2, 3].existsOne(i, e, e > 2)",
        "!([1, 2, 3].existsOne(i, e, e > 1))",
        "{'a': 1, 'b': 2}.all(k, v, v > 0 && k != '')",
        "{'a': 1, 'b': 2}.exists(k, v, k == 'b' && v == 2)",
        "{'a': 1, 'b': 2}.existsOne(k, v, v == 2)",
        "[1, 2, 3].transformList(i, e, e * 2 + i) == [2, 5, 8]",
        "[1, 2, 3].transformList(i, e, e > 1, e * 10) == [20, 30]",
        "{'a': 1, 'b': 2}.transformMap(k, v, v + 1) == {'a': 2, 'b': 3}",
        "{'a': 1, 'b': 2}.transformMap(k, v, v > 1, v + 1) == {'b': 3}",
        "[5, 6].transformMap(i, e, e) == {0: 5, 1: 6}",
        "{'a': 1, 'b': 2}.transformMapEntry(k, v, {k + '2': v + 1}) == {'a2': 2, 'b2': 3}",
        "{'a': 1, 'b': 2}.transformMapEntry(k, v, v > 1, {k + '2': v + 1}).size() == 1",
        // The one-variable forms stay as they were; a nested one that rebinds a name shadows it.
        "[1, 2].all(e, e > 0) && [[1], [2]].all(i, e, e.all(e, e > 0))",
    ]);
    assert!(
        error_of("{'a': 1, 'b': 1}.transformMapEntry(k, v, {'x': v}) == {}").contains("already exists"),
        "a key made twice is an error"
    );
}
