package jsonscan

// ParseInt parses an optional minus sign followed by decimal digits (as
// ScanNumber finds an integer, or an id sent as a string), reporting false
// for anything else or a value that does not fit in an int64, as
// strconv.ParseInt would, without its allocation.
func ParseInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 19 { // 19 digits cannot overflow a uint64
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if !isDigit(c) {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	switch {
	case neg && n <= 1<<63:
		return -int64(n), true
	case !neg && n < 1<<63:
		return int64(n), true
	}
	return 0, false
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// digits returns the index after the digits at b[i].
func digits(b []byte, i int) int {
	for i < len(b) && isDigit(b[i]) {
		i++
	}
	return i
}

// ScanNumber scans the number at b[i] and returns the index after it and
// whether it is written as an integer (no fraction, no exponent).
func ScanNumber(b []byte, i int) (end int, integer, ok bool) {
	j := i
	if j < len(b) && b[j] == '-' {
		j++
	}
	switch {
	case j >= len(b):
		return 0, false, false
	case b[j] == '0':
		j++
	case '1' <= b[j] && b[j] <= '9':
		j = digits(b, j+1)
	default:
		return 0, false, false
	}
	integer = true
	if j < len(b) && b[j] == '.' {
		integer = false
		d := digits(b, j+1)
		if d == j+1 {
			return 0, false, false
		}
		j = d
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		integer = false
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		d := digits(b, j)
		if d == j {
			return 0, false, false
		}
		j = d
	}
	return j, integer, true
}
