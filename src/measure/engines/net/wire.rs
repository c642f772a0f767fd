//! The message of the ping-pong: sockperf's header, so that lowlat's client works against a
//! `sockperf sr` server and `sockperf pp` against lowlat's echo.
//!
//! As sockperf 3.7 puts it on the wire (observed on loopback), every message starts with 14
//! bytes, big-endian:
//!
//! | bytes | field                                                             |
//! |-------|-------------------------------------------------------------------|
//! | 0-7   | sequence number                                                   |
//! | 8-9   | flags: 0x1 sent by a client, 0x2 an answer is asked for, 0x4 warm-up |
//! | 10-13 | length of the whole message, header included (the TCP framing)    |
//!
//! The rest is payload, echoed as it came. The server answers a message that has both flags
//! (and not the warm-up one) with the same bytes and the client flag cleared; it answers
//! nothing else.

/// The header's length, and the smallest message.
pub(crate) const HEADER: usize = 14;

/// The largest message: what one UDP datagram over IPv4 carries (65,535 bytes less the IP and
/// UDP headers); TCP messages are held to it too.
pub(crate) const MAX_MESSAGE: usize = 65_507;

/// Set by a client.
const CLIENT: u16 = 0x1;
/// An answer is asked for.
const PONG_REQUEST: u16 = 0x2;
/// A warm-up message: `sockperf sr` answers none, whatever else is set.
const WARMUP: u16 = 0x4;

/// Writes the header of a client's message of `len` bytes asking for an answer into the start
/// of `buf`, with sequence number 0.
pub(crate) fn request_header(buf: &mut [u8], len: usize) {
    buf[8..10].copy_from_slice(&(CLIENT | PONG_REQUEST).to_be_bytes());
    buf[10..14].copy_from_slice(&(len as u32).to_be_bytes());
}

/// Sets the sequence number of the message in `buf`.
#[inline(always)]
pub(crate) fn set_sequence(buf: &mut [u8], sequence: u64) {
    buf[..8].copy_from_slice(&sequence.to_be_bytes());
}

/// The sequence number of `message` when it is an answer of `len` bytes (the client flag
/// cleared, the answer flag kept); `None` for anything else (a foreign or garbled datagram).
#[inline(always)]
pub(crate) fn answer_sequence(message: &[u8], len: usize) -> Option<u64> {
    if message.len() != len || length(message) != Some(len) {
        return None;
    }
    (flags(message) & (CLIENT | PONG_REQUEST) == PONG_REQUEST)
        .then(|| u64::from_be_bytes(message[..8].try_into().expect("8 bytes")))
}

/// The length the header of `message` gives, when it has a header.
#[inline(always)]
pub(crate) fn length(message: &[u8]) -> Option<usize> {
    let bytes = message.get(10..14)?;
    Some(u32::from_be_bytes(bytes.try_into().expect("4 bytes")) as usize)
}

/// Makes the client's message in `message` its answer, in place; false when it asks for no
/// answer (sockperf's warm-up and other kinds) or is not a whole message.
#[inline(always)]
pub(crate) fn answer_in_place(message: &mut [u8]) -> bool {
    if length(message) != Some(message.len()) {
        return false;
    }
    let flags = flags(message);
    if flags & (CLIENT | PONG_REQUEST | WARMUP) != CLIENT | PONG_REQUEST {
        return false;
    }
    message[8..10].copy_from_slice(&(flags & !CLIENT).to_be_bytes());
    true
}

fn flags(message: &[u8]) -> u16 {
    u16::from_be_bytes(message[8..10].try_into().expect("2 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first message `sockperf pp -m 64` sent, as captured on loopback (payload cut).
    const SOCKPERF_REQUEST: &str = "0000000000000001000300000040";
    /// `sockperf sr`'s answer to it.
    const SOCKPERF_ANSWER: &str = "0000000000000001000200000040";

    fn hex(text: &str, len: usize) -> Vec<u8> {
        let mut bytes: Vec<u8> = (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
            .collect();
        bytes.resize(len, 0xaa);
        bytes
    }

    #[test]
    fn requests_and_answers_are_sockperfs() {
        let mut ours = vec![0xaa; 64];
        request_header(&mut ours, 64);
        set_sequence(&mut ours, 1);
        assert_eq!(ours, hex(SOCKPERF_REQUEST, 64));
        assert!(answer_in_place(&mut ours));
        assert_eq!(ours, hex(SOCKPERF_ANSWER, 64));
        assert_eq!(answer_sequence(&ours, 64), Some(1));
    }

    #[test]
    fn what_is_not_an_answer_of_the_size_is_foreign() {
        let answer = hex(SOCKPERF_ANSWER, 64);
        assert_eq!(answer_sequence(&answer, 65), None);
        assert_eq!(answer_sequence(&answer[..63], 64), None);
        // A request (the client flag still set) is not an answer.
        assert_eq!(answer_sequence(&hex(SOCKPERF_REQUEST, 64), 64), None);
        assert_eq!(answer_sequence(&answer[..5], 64), None);
    }

    #[test]
    fn only_whole_requests_for_an_answer_are_answered() {
        // sockperf's warm-up flag (0x4) is not answered, even with an answer asked for, nor
        // a client's message that asks for none.
        let mut warmup = hex("0000000000000001000700000040", 64);
        assert!(!answer_in_place(&mut warmup));
        let mut no_answer = hex("0000000000000001000100000040", 64);
        assert!(!answer_in_place(&mut no_answer));
        // A length that is not the datagram's.
        let mut short = hex(SOCKPERF_REQUEST, 60);
        assert!(!answer_in_place(&mut short));
        let mut tiny = vec![0u8; 9];
        assert!(!answer_in_place(&mut tiny));
        // An answer is not answered again.
        let mut answer = hex(SOCKPERF_ANSWER, 64);
        assert!(!answer_in_place(&mut answer));
    }
}
