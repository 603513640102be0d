//! Kernel names cut to fit a table while the parts that tell them apart stay.
//!
//! A name longer than the column keeps its start (namespace, kernel family) and end (template
//! arguments, tile sizes) around an ellipsis. Where two names cut that way would read alike —
//! ROCm's Tensile GEMMs share long prefixes and suffixes and differ in a tile size in the
//! middle — each is cut around the part where it differs from the names it resembles. The id
//! column ([`crate::kernel_id`]) tells rows apart in any case.

use super::truncate_middle;

/// Characters of a name's start kept when the middle is shown.
const HEAD: usize = 14;
/// Characters of a name's end kept when the middle is shown.
const TAIL: usize = 10;
/// Characters shown before the first difference, for context.
const CONTEXT: usize = 4;

/// The labels of `names` in a column of `max` characters; whole names when `wide`.
pub(crate) fn kernel_labels(names: &[&str], max: usize, wide: bool) -> Vec<String> {
    if wide {
        return names.iter().map(|n| (*n).to_owned()).collect();
    }
    let cut: Vec<String> = names.iter().map(|n| truncate_middle(n, max)).collect();
    (0..names.len())
        .map(|index| {
            let alike: Vec<&str> = (0..names.len())
                .filter(|&o| o != index && cut[o] == cut[index] && names[o] != names[index])
                .map(|o| names[o])
                .collect();
            if alike.is_empty() {
                cut[index].clone()
            } else {
                cut_where_it_differs(names[index], &alike, max)
            }
        })
        .collect()
}

/// `name` cut to `max` characters keeping its start, its end, and the part from where it first
/// differs from any of `alike` (names whose plain cuts read the same).
fn cut_where_it_differs(name: &str, alike: &[&str], max: usize) -> String {
    let chars: Vec<char> = name.chars().collect();
    let length = chars.len();
    let differs_at = alike
        .iter()
        .map(|other| common_prefix(&chars, other))
        .max()
        .unwrap_or(0);
    // Start, `…`, the differing middle, `…`, end: the middle gets what the rest leaves.
    let width = max.saturating_sub(HEAD + TAIL + 2);
    if length <= max || width == 0 || differs_at >= length.saturating_sub(TAIL) {
        return truncate_middle(name, max);
    }
    let start = differs_at.saturating_sub(CONTEXT).max(HEAD);
    let end = (start + width).min(length - TAIL);
    let piece = |from: usize, to: usize| chars[from..to].iter().collect::<String>();
    let head = piece(0, HEAD);
    let middle = piece(start, end);
    let tail = piece(length - TAIL, length);
    let left = if start > HEAD { "…" } else { "" };
    let right = if end < length - TAIL { "…" } else { "" };
    format!("{head}{left}{middle}{right}{tail}")
}

/// How many leading characters `chars` shares with `other`.
fn common_prefix(chars: &[char], other: &str) -> usize {
    chars
        .iter()
        .zip(other.chars())
        .take_while(|(a, b)| **a == *b)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT128x128x64_MI16x16x1_SN_LDSB1_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_EPS0_GRVWA8_GRVWB8_GSUAMB_IU1_K1_LBSPPA2048_LBSPPB256_LBSPPM0_LPA16_LPB16_LPM0_LRVW16_LWPMn1_MIAV1_MIWT4_4_MO40_NTn1_NTA0_NTB0_NTC0_NTD0_NEPBS16_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA1_SIA3_SS1_SPO0_SRVW0_SSO0_SVW8_SK0_SKXCCM0_TLDS1_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA8_VWB1_WSGRA0_WSGRB0_WS64_WG32_8_1";

    fn variant(tile: &str) -> String {
        A.replace("MT128x128x64", tile)
    }

    #[test]
    fn tensile_gemms_that_differ_in_the_middle_keep_that_middle() {
        let b = variant("MT64x256x64");
        let c = variant("MT256x64x64");
        let names = [A, b.as_str(), c.as_str()];
        assert_eq!(
            truncate_middle(A, 64),
            truncate_middle(&b, 64),
            "plain cuts clash"
        );
        let labels = kernel_labels(&names, 64, false);
        for (label, tile) in labels
            .iter()
            .zip(["MT128x128x64", "MT64x256x64", "MT256x64x64"])
        {
            assert!(label.chars().count() <= 64, "{label}");
            assert!(label.contains(&tile[..8]), "{label} shows {tile}");
            assert!(label.starts_with("Cijk_Alik_Bljk"), "{label}");
            assert!(label.ends_with("_WG32_8_1"), "{label}");
        }
        let distinct: std::collections::HashSet<&String> = labels.iter().collect();
        assert_eq!(distinct.len(), 3, "{labels:?}");
    }

    #[test]
    fn short_and_distinct_names_are_left_alone_and_wide_keeps_everything() {
        let names = ["void gemm<128>", "elementwise_kernel"];
        assert_eq!(
            kernel_labels(&names, 64, false),
            ["void gemm<128>", "elementwise_kernel"]
        );
        let b = variant("MT64x256x64");
        let wide = kernel_labels(&[A, b.as_str()], 64, true);
        assert_eq!(wide, [A.to_owned(), b]);
    }

    #[test]
    fn the_same_name_twice_is_not_a_clash() {
        let labels = kernel_labels(&[A, A], 64, false);
        assert_eq!(labels[0], truncate_middle(A, 64));
        assert_eq!(labels[0], labels[1]);
    }
}
