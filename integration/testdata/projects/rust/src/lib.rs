//! Checks identification numbers with the Luhn algorithm.

/// Reports whether `number` (digits, spaces allowed) passes the Luhn check.
pub fn valid(number: &str) -> bool {
    let digits: Vec<u32> = number.chars().filter(|c| !c.is_whitespace()).map(|c| c.to_digit(10)).collect::<Option<_>>().unwrap_or_default();
    if digits.len() < 2 {
        return false;
    }
    let sum: u32 = digits.iter().rev().enumerate().map(|(i, &d)| if i % 2 == 1 { let x = d * 2; if x > 9 { x - 9 } else { x } } else { d }).sum();
    sum % 10 == 0
}

#[cfg(test)]
mod tests {
    use super::valid;

    #[test]
    fn known_numbers() {
        assert!(valid("4539 3195 0343 6467"));
        assert!(!valid("8273 1232 7352 0569"));
        assert!(!valid("0"));
        assert!(!valid("059a"));
    }
}
