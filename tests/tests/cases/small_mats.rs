//! The cross-target cases of small matrices (language §3.6): `tests/tests/cases/small_mats.tile`.

use super::{case, Case};
use tilec::SourceSet;
use tilec_runtime::random_uniform;

/// Small matrices (`tests/tests/cases/small_mats.tile`, language §3.6): the factorizations of
/// 3x3 matrices (random, the identity, zero, two equal columns) and the Gauss-Jordan inverse
/// of 6x6 ones (random plus 6 I) in partial tiles, one matrix per program, the constructs, and
/// math functions entry by entry.
pub(crate) fn small_mats() -> Vec<Case> {
    let src = SourceSet::with_stdlib("small_mats.tile", include_str!("small_mats.tile"));
    let m = 21u64;
    let mut a = random_uniform((m * 9) as usize, 71);
    for (k, e) in (45..54).enumerate() {
        a[e] = if k % 4 == 0 { 1.0 } else { 0.0 };
        a[e + 9] = 0.0;
    }
    for r in 0..3 {
        a[63 + r * 3 + 2] = a[63 + r * 3];
    }
    let sq = vec![m, 3, 3];
    let outs33 = ["Inv", "U", "V", "Q", "R", "H"];
    let mut arrays = vec![("A", a.clone(), sq.clone())];
    for o in outs33 {
        arrays.push((o, vec![7.0; (m * 9) as usize], sq.clone()));
    }
    arrays.push(("Det", vec![7.0; m as usize], vec![m]));
    for o in ["S", "W"] {
        arrays.push((o, vec![7.0; (m * 3) as usize], vec![m, 3]));
    }
    let mut outs: Vec<&'static str> = outs33.to_vec();
    outs.extend(["Det", "S", "W"]);
    let fns = case(src.clone(), "mat_fns", arrays, vec![], outs);
    let n6 = 11u64;
    let mut b = random_uniform((n6 * 36) as usize, 72);
    for k in 0..n6 as usize {
        for i in 0..6 {
            b[k * 36 + i * 7] += 6.0;
        }
    }
    let inv = case(
        src.clone(),
        "inv_det",
        vec![
            ("A", b, vec![n6, 6, 6]),
            ("Inv", vec![7.0; (n6 * 36) as usize], vec![n6, 6, 6]),
            ("Det", vec![7.0; n6 as usize], vec![n6]),
        ],
        vec![],
        vec!["Inv", "Det"],
    );
    let mut well = a.clone();
    for k in 0..m as usize {
        for i in 0..3 {
            well[k * 9 + i * 4] += 3.0;
        }
    }
    let one = case(
        src.clone(),
        "one_each",
        vec![
            ("A", well, sq.clone()),
            ("X", random_uniform((m * 3) as usize, 73), vec![m, 3]),
            ("Y", vec![7.0; (m * 3) as usize], vec![m, 3]),
            ("Z", vec![7.0; (m * 9) as usize], sq.clone()),
        ],
        vec![],
        vec!["Y", "Z"],
    );
    let cons = case(
        src,
        "constructs",
        vec![
            ("A", a, sq.clone()),
            ("Out", random_uniform((m * 9) as usize, 74), sq),
            ("Nrm", vec![7.0; m as usize], vec![m]),
            ("X", vec![7.0; (m * 3) as usize], vec![m, 3]),
        ],
        vec![],
        vec!["Out", "Nrm", "X"],
    );
    let ent = case(
        SourceSet::with_stdlib("small_mats.tile", include_str!("small_mats.tile")),
        "entrywise",
        vec![
            ("A", random_uniform((m * 9) as usize, 75), vec![m, 3, 3]),
            ("E", vec![7.0; (m * 9) as usize], vec![m, 3, 3]),
        ],
        vec![],
        vec!["E"],
    );
    vec![fns, inv, one, cons, ent]
}
