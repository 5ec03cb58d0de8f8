package natsstore

import "testing"

// TestParseSubject reads back the subjects the store writes, ids that are not plain
// tokens included, and refuses one of another prefix.
func TestParseSubject(t *testing.T) {
	s := &Store{prefix: "intentd.a"}
	for _, tc := range []struct {
		subject  string
		kind, id string
	}{
		{s.intentSubject("0b6c-4f_x"), kindIntent, "0b6c-4f_x"},
		{s.intentSubject("with.dot and space"), kindIntent, "with.dot and space"},
		{s.intentSubject(""), kindIntent, ""},
		{s.policySubject("P"), kindPolicy, "P"},
		{s.bytecodeSubject("=P"), kindBytecode, "=P"},
		{s.eventSubject(), kindEvent, ""},
		{s.floorSubject(), kindMeta, "floor"},
		{s.logSubject(1<<56 + 3), kindLog, "72057594037927939"},
		{s.mandateSubject("6f1c2a9e-0d4b-4c3e-9a7f-2b8d5e1f0c6a"), kindMandate, "6f1c2a9e-0d4b-4c3e-9a7f-2b8d5e1f0c6a"},
		{s.mandateSubject("m.1"), kindMandate, "m.1"},
	} {
		kind, id, ok := s.parseSubject(tc.subject)
		if !ok || kind != tc.kind || id != tc.id {
			t.Errorf("parseSubject(%q) = %q, %q, %v; want %q, %q", tc.subject, kind, id, ok, tc.kind, tc.id)
		}
	}
	if _, _, ok := s.parseSubject("intentd.b.intent.x"); ok {
		t.Error("a subject of another prefix was read as the store's")
	}
}
