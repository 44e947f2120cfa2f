//! Message payloads: random upper-case letters, like Kafka's ProducerPerformance, so
//! compression sees the same kind of data from both tools.

/// `size` bytes of pseudo-random letters A..Z (xorshift64, fixed seed: runs are comparable).
pub fn letters(size: usize) -> Vec<u8> {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..size)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            b'A' + (state % 26) as u8
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn letters_only_and_sized() {
        let payload = super::letters(1000);
        assert_eq!(payload.len(), 1000);
        assert!(payload.iter().all(u8::is_ascii_uppercase));
    }
}
