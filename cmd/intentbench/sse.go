package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// sseEvent is one event of the stream as the reader hands it out. Data is only valid
// until the next call to Next: at ten thousand subscribers, copying every frame would
// make the load generator, not the server, the thing measured.
type sseEvent struct {
	ID    uint64
	HasID bool
	Type  []byte
	Data  []byte
}

// sseReader reads Server-Sent Events frames: fields "id", "event" and "data", comment
// lines (heartbeats) and "retry" skipped, a blank line ending each event. It reads only
// what the load tool needs, not the whole of the SSE standard: no multi-line data
// joining beyond a "\n", and CR line ends are accepted only as part of CRLF.
type sseReader struct {
	r     *bufio.Reader
	typ   []byte
	data  []byte
	lines int
}

func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 16<<10), data: make([]byte, 0, 1024)}
}

// errSSELine is a line the stream should not contain.
var errSSELine = errors.New("sse: malformed line")

// maxSSELine bounds one line, so that a stream without line ends cannot grow the
// reader's buffer without limit.
const maxSSELine = 1 << 20

// Next returns the next event that has data. An event with an id but no data (which
// the server never sends) is skipped, as the SSE standard says.
func (s *sseReader) Next() (sseEvent, error) {
	var ev sseEvent
	s.typ = s.typ[:0]
	s.data = s.data[:0]
	hasData := false
	for {
		line, err := s.readLine()
		if err != nil {
			return sseEvent{}, err
		}
		s.lines++
		if len(line) == 0 {
			if hasData {
				ev.Type, ev.Data = s.typ, s.data
				return ev, nil
			}
			ev = sseEvent{}
			continue
		}
		if line[0] == ':' {
			continue
		}
		name, value, _ := bytes.Cut(line, []byte{':'})
		value = bytes.TrimPrefix(value, []byte{' '})
		switch string(name) {
		case "id":
			n, err := strconv.ParseUint(string(value), 10, 64)
			if err != nil {
				return sseEvent{}, fmt.Errorf("%w: id %q: %v", errSSELine, value, err)
			}
			ev.ID, ev.HasID = n, true
		case "event":
			s.typ = append(s.typ[:0], value...)
		case "data":
			if hasData {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, value...)
			hasData = true
		case "retry":
		default:
			return sseEvent{}, fmt.Errorf("%w: unknown field %q", errSSELine, clipBytes(name))
		}
	}
}

// readLine returns one line without its LF or CRLF.
func (s *sseReader) readLine() ([]byte, error) {
	line, err := s.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		// A line longer than the buffer: gather it in a copy.
		long := append([]byte(nil), line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(long) > maxSSELine {
				return nil, fmt.Errorf("%w: a line over %d bytes", errSSELine, maxSSELine)
			}
			line, err = s.r.ReadSlice('\n')
			long = append(long, line...)
		}
		line = long
	}
	if err != nil {
		if errors.Is(err, io.EOF) && len(line) > 0 {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

func clipBytes(b []byte) []byte {
	if len(b) > 32 {
		return b[:32]
	}
	return b
}

// intentIDKey opens the intent_id member of an event's data. The server writes its
// own compact JSON, so a byte search finds it without decoding the whole event, which
// at fan-out sizes would cost more than the server's work.
var intentIDKey = []byte(`"intent_id":"`)

// eventIntentID returns the intent id of an event's data, or nil.
func eventIntentID(data []byte) []byte {
	i := bytes.Index(data, intentIDKey)
	if i < 0 {
		return nil
	}
	rest := data[i+len(intentIDKey):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return nil
	}
	return rest[:j]
}
