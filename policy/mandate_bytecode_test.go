package policy

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// evidenceEnd is the offset in b, bytecode, just past the evidence table: where an
// amount's code and a period's byte are written. flags is the offset of the flags byte.
func evidenceEnd(t *testing.T, b []byte) (end, flags int) {
	t.Helper()
	off, flags := paramsEnd(t, b)
	uvarint := func() uint64 {
		n, k := binary.Uvarint(b[off:])
		if k <= 0 {
			t.Fatalf("bad uvarint at %d", off)
		}
		off += k
		return n
	}
	if b[flags]&flagAgents != 0 {
		uvarint() // the agents slot
	}
	for range uvarint() {
		off += int(uvarint()) + 1 // name, type
	}
	return off, flags
}

// TestMandateAddOnlyTheirBytes pins the encoding from both sides: a policy without the
// mandate parts is written as it was before they existed (the golden files of
// testdata/bytecode pin those bytes), and adding an amount part, then a period part,
// changes only the flags byte and puts the amount's code, then the period's byte, after
// the evidence table: the rest, and so everything an older policy's id rests on, stays
// as it is.
func TestMandateAddOnlyTheirBytes(t *testing.T) {
	var srcs []string
	files, _ := filepath.Glob(filepath.Join("testdata", "pretty", "*.src"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "amount") {
			srcs = append(srcs, string(b))
		}
	}
	srcs = append(srcs, example, identityBase, agentsBase, "name nothing\nrequires { true; }\n")
	for seed := range uint64(50) {
		srcs = append(srcs, newGen(seed).source())
	}
	// The amount reads no field, so that it fits every policy; its code is INT 250.
	code := binary.AppendVarint([]byte{bcInt}, 250)
	for i, src := range srcs {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			without := mustCompile(t, src)
			if without.f.amount != nil || without.Period() != "" || without.Reads() != 0 {
				t.Fatal("a policy without the mandate parts has them")
			}
			b0 := without.Bytecode()
			end, flags := evidenceEnd(t, b0)
			if b0[flags]&(flagAmount|flagPeriod|flagContext) != 0 {
				t.Fatalf("flags %#x without the parts", b0[flags])
			}
			want := bytes.Clone(b0[:end])
			want[flags] |= flagAmount
			want = binary.AppendUvarint(want, uint64(len(code)))
			want = append(want, code...)
			if got := mustCompile(t, src+"\namount 250\n").Bytecode(); !bytes.Equal(got, append(bytes.Clone(want), b0[end:]...)) {
				t.Fatalf("with an amount part:\n% x\nwant\n% x", got, append(want, b0[end:]...))
			}
			want[flags] |= flagPeriod
			want = append(want, byte(periodMonth))
			want = append(want, b0[end:]...)
			if got := mustCompile(t, src+"\nperiod month amount 250\n").Bytecode(); !bytes.Equal(got, want) {
				t.Fatalf("with amount and period parts:\n% x\nwant\n% x", got, want)
			}
		})
	}
}

// mandatePolicy is bytecode of a policy x of no parameters and one evidence field p of
// type int, the flags byte, the amount and period bytes as given after the evidence
// table, and one constraint of the code given.
func mandatePolicy(flags byte, tail []byte, code ...byte) []byte {
	b := []byte("IPOL\x01\x01x\x00")
	b = append(b, flags|flagEvidence, 0, 1, 1, 'p', byte(TypeInt))
	b = append(b, tail...)
	b = append(b, 1, 0, byte(len(code)))
	return append(b, code...)
}

// Codes of one constraint, and of amounts.
var (
	ctxLt0     = []byte{bcCtx, byte(ctxSpent), bcInt, 0, bcLt}          // mandate.spent < 0
	timeLt0    = []byte{bcCtx, byte(ctxTime), bcInt, 0, bcLt}           // decision.time < 0
	periodLt0  = []byte{bcCtx, byte(ctxPeriodSpent), bcInt, 0, bcLt}    // mandate.period_spent < 0
	amountTwo  = []byte{4, bcEvid, 0, bcEvid, 0}                        // an amount of two values
	evidAmount = []byte{2, bcEvid, 0}                                   // amount evidence.p
	amountCtx  = []byte{5, bcEvid, 0, bcCtx, byte(ctxPurchases), bcAdd} // amount evidence.p + mandate.purchases
)

// TestDecodeMandate refuses the malformed mandate sections and context values that a
// hand or a bit flip could write, each with an error that says what is wrong.
func TestDecodeMandate(t *testing.T) {
	for _, ok := range [][]byte{
		mandatePolicy(flagAmount|flagPeriod|flagContext, append(bytes.Clone(evidAmount), byte(periodWeek)), ctxLt0...),
		mandatePolicy(flagContext, nil, timeLt0...),
		mandatePolicy(flagAmount, evidAmount, bcTrue),
	} {
		if _, err := Decode(ok); err != nil {
			t.Fatalf("the well-formed policy % x: %v", ok, err)
		}
	}
	tests := []struct {
		name string
		b    []byte
		want string
	}{
		{"unknown flag", mandatePolicy(0x20, nil, bcTrue), "unknown flags 0x21"},
		{"period 0", mandatePolicy(flagAmount|flagPeriod, append(bytes.Clone(evidAmount), 0), bcTrue), "period 0 is not day (1), week (2) or month (3)"},
		{"period 4", mandatePolicy(flagAmount|flagPeriod, append(bytes.Clone(evidAmount), 4), bcTrue), "period 4 is not day (1), week (2) or month (3)"},
		{"truncated period", mandatePolicy(flagAmount|flagPeriod, evidAmount)[:17], "truncated (reading period)"},
		{"empty amount", mandatePolicy(flagAmount, []byte{0}, bcTrue), "amount code is empty"},
		{"truncated amount", mandatePolicy(flagAmount, nil)[:14], "truncated (reading amount code length)"},
		{"an amount too long", mandatePolicy(flagAmount, []byte{40, bcEvid, 0}, bcTrue), "amount code length 40 is over the limit of"},
		{"an amount of an unknown opcode", mandatePolicy(flagAmount, []byte{1, 0xee}, bcTrue), "policy: amount: bytecode offset 1: unknown opcode 0xee"},
		{"an amount of two values", mandatePolicy(flagAmount, amountTwo, bcTrue), "policy: amount: bytecode: code leaves 2 values on the stack, want 1"},
		{"a bool amount", mandatePolicy(flagAmount, []byte{1, bcTrue}, bcTrue),
			"bytecode does not check: the amount must be an int (the amount of one purchase): true is bool"},
		{"an amount of the mandate", mandatePolicy(flagAmount|flagContext, amountCtx, ctxLt0...),
			"bytecode does not check: the amount may read only evidence and parameters, not mandate.purchases"},
		{"an amount of the mandate, no flag", mandatePolicy(flagAmount, amountCtx, bcTrue),
			"policy: amount: bytecode offset 4: context value, but flags bit 4 is clear"},
		{"an amount without the flag", mandatePolicy(0, evidAmount, bcTrue), "bytecode offset 16: constraint 0: bad flag"},
		{"a period without the flag", mandatePolicy(flagAmount, append(bytes.Clone(evidAmount), 1), bcTrue), "2 bytes after the last constraint"},
		{"a period without an amount", mandatePolicy(flagPeriod, []byte{1}, bcTrue),
			"bytecode does not check: period needs an amount part"},
		{"a context value without the flag", mandatePolicy(0, nil, timeLt0...), "constraint 0: bytecode offset 2: context value, but flags bit 4 is clear"},
		{"the flag without a context value", mandatePolicy(flagContext, nil, bcTrue), "not in the canonical form"},
		{"an unknown context value", mandatePolicy(flagContext, nil, bcCtx, 6, bcInt, 0, bcLt), "context value 6 is over the limit of 5"},
		{"a total without an amount", mandatePolicy(flagContext, nil, ctxLt0...),
			"bytecode does not check: mandate.spent needs an amount part"},
		{"a period total without a period", mandatePolicy(flagAmount|flagContext, evidAmount, periodLt0...),
			"bytecode does not check: mandate.period_spent needs a period part"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.b)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestMandateOldReaders: what a reader that predates the mandate parts makes of their
// bytecode. It refuses it by its flags, as it refused the agents part's: every policy
// that has a part or reads a context value sets a flag it does not know.
func TestMandateOldReaders(t *testing.T) {
	const oldFlags = flagEvidence | flagAgents
	for _, src := range []string{
		mandateCanonical,
		"name t\nparameters { until: int }\nrequires { decision.time <= parameters.until; }\n",
		"name a\nevidence { p: int }\namount evidence.p\nrequires { evidence.p > 0; }\n",
	} {
		p := mustCompile(t, src)
		_, flags := paramsEnd(t, p.Bytecode())
		if p.Bytecode()[flags]&^oldFlags == 0 {
			t.Fatalf("%s: flags %#x are all an older reader knows", src, p.Bytecode()[flags])
		}
	}
}
