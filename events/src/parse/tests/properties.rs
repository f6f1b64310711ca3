//! Properties over generated inputs: no input panics, every error span fits the input, raw
//! configs that parse encode back to themselves.

use super::*;
use alloc::format;
use alloc::string::String;
use proptest::prelude::*;

fn all_caps() -> [PmuCaps; 5] {
    [skx(), spr(), zen4(), caps("AuthenticAMD-16-2"), tsc()]
}

fn check_any(input: &str) -> Result<(), TestCaseError> {
    let t = stub();
    for c in all_caps() {
        for table in [None, Some(&t as &dyn NamedEvents)] {
            match parse(input, &c, table) {
                Ok(list) => {
                    prop_assert!(!list.is_empty());
                    for s in list.specs() {
                        prop_assert!(
                            input
                                .get(s.position..)
                                .is_some_and(|r| r.starts_with(&s.text))
                        );
                    }
                }
                Err(e) => {
                    prop_assert!(e.position <= input.len(), "{e:?}");
                    prop_assert!(input.is_char_boundary(e.position), "{e:?}");
                    let end = e.position.checked_add(e.len);
                    prop_assert!(end.is_some_and(|end| end <= input.len()), "{e:?}");
                    prop_assert!(end.is_some_and(|end| input.is_char_boundary(end)), "{e:?}");
                    let _ = e.to_string();
                    prop_assert!(e.caret_line(input).contains('^'));
                }
            }
        }
    }
    Ok(())
}

fn syntax_soup() -> impl Strategy<Value = String> {
    let atoms = prop::sample::select(vec![
        "{",
        "}",
        "/",
        ",",
        ":",
        "=",
        " ",
        "r",
        "x",
        "u",
        "k",
        "H",
        "G",
        "p",
        "0",
        "1",
        "9",
        "a",
        "c",
        "f",
        "0x",
        "cpu",
        "cpu_core",
        "cpu_atom",
        "event",
        "umask",
        "umask2",
        "cmask",
        "inv",
        "edge",
        "any",
        "in_tx",
        "in_txcp",
        "config",
        "name",
        "'",
        "cycles",
        "instructions",
        "branch-misses",
        "ex_ret_brn_misp",
        "MACHINE_CLEARS.COUNT",
        "ffffffffffffffff",
        "é",
        "\t",
    ]);
    prop::collection::vec(atoms, 0..24).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_strings_never_panic(input in any::<String>()) {
        check_any(&input)?;
    }

    #[test]
    fn syntax_soup_never_panics(input in syntax_soup()) {
        check_any(&input)?;
    }

    #[test]
    fn every_raw_config_either_parses_or_is_refused(
        config in prop_oneof![any::<u64>(), any::<u64>().prop_map(|c| c & 0x0000_ff0f_ffa4_ffff)],
        user: bool,
    ) {
        let input = format!("r{config:x}{}", if user { ":u" } else { "" });
        for c in all_caps() {
            match parse(&input, &c, None) {
                Ok(l) => {
                    let s = l.specs().next().unwrap();
                    // What parses encodes back to the same event bits.
                    let enc = encode::gp_event_select(c.vendor, &s.event.select, &Modifiers { usr: false, os: false, ..s.modifiers }, false);
                    prop_assert_eq!(enc, Ok(config));
                }
                Err(e) => prop_assert_eq!((e.position, e.len), (0, input.len() - if user { 2 } else { 0 })),
            }
        }
    }
}
