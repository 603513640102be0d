//! A kernel's short id: the same for the same kernel name in every report.
//!
//! GPU kernel names run to hundreds of characters (ROCm's Tensile GEMMs all start
//! `Cijk_Alik_Bljk_…` and differ in tile sizes deep inside), so tables cut them, and cut names
//! can read alike. Every kernel row therefore carries an id derived from its full name alone:
//! the first six hex digits of the name's SHA-256. It is the same in `analyze` and `diff`, in
//! the terminal, `--json`, `--csv`, `--parquet` and the HTML page, across files and runs, and
//! anyone can compute it (`printf %s "$NAME" | sha256sum | cut -c1-6`).

use sha2::{Digest, Sha256};

/// Hex digits in an id: 24 bits, so two of a report's top kernels share one about once in
/// 30,000 reports of 50 kernels.
pub const KERNEL_ID_DIGITS: usize = 6;

/// The lines a report with kernel tables ends with, saying what the ids are.
pub const KERNEL_ID_NOTE: &str =
    "id: the first 6 hex digits of the SHA-256 of the kernel's full name, the same in
    analyze, diff, --json, --csv, --parquet and HTML; --wide prints whole names";

/// The short id of the kernel named `name`.
pub fn kernel_id(name: &str) -> String {
    let digest = Sha256::digest(name.as_bytes());
    let mut id = String::with_capacity(KERNEL_ID_DIGITS);
    for byte in digest.iter().take(KERNEL_ID_DIGITS / 2) {
        id.push_str(&format!("{byte:02x}"));
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_is_the_start_of_the_names_sha256() {
        // printf %s abc | sha256sum: ba7816bf…
        assert_eq!(kernel_id(""), "e3b0c4");
        assert_eq!(kernel_id("abc"), "ba7816");
    }

    #[test]
    fn names_that_differ_deep_inside_get_different_ids() {
        let a = "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT128x128x64_MI16x16x1_SN_WG32_8_1";
        let b = "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT64x128x64_MI16x16x1_SN_WG32_8_1";
        assert_ne!(kernel_id(a), kernel_id(b));
        assert_eq!(kernel_id(a), kernel_id(a));
        assert_eq!(kernel_id(a).len(), KERNEL_ID_DIGITS);
    }
}
