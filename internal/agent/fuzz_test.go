package agent

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aepforms/aepforms/e2e/aeptest"
	"github.com/aepforms/aepforms/internal/aep"
)

// FuzzRespond sends arbitrary answers to every kind of request and checks
// the target's invariants: one ack per command, either a nack alone or the
// full outcome, every event valid and keeping the stream rules, and a
// permission request granted only by its allow option or text naming it.
func FuzzRespond(f *testing.F) {
	for _, a := range validAnswers {
		b, _ := json.Marshal(a)
		f.Add(b, uint8(0))
	}
	for _, s := range []string{`{"text":"allow"}`, `{"text":"Allow once "}`, `{"option":"allow","values":{}}`,
		`{"values":{"name":1,"regions":"1"}}`, `{"values":null}`, `{"text":""}`, `"x"`, `{"option":7}`, `{}`} {
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, answer []byte, pick uint8) {
		names := AllScenarios()[1:] // every scenario with a request
		name := names[int(pick)%len(names)]
		h := newHarness(t, []string{name}, nil)
		sc := aeptest.NewStreamChecker()
		for _, ev := range h.take() {
			if err := sc.Check(ev); err != nil {
				t.Fatal(err)
			}
		}
		_, q := h.pendingRequest(name)
		s := h.session(name)
		var raw json.RawMessage
		if json.Unmarshal(answer, &raw) != nil {
			raw = json.RawMessage(`null`)
		}
		cmd := command{typ: "control.attention.respond", session: s.ID, subject: q.ID,
			data: map[string]json.RawMessage{"answer": raw}}.event(t)
		evs := h.send(cmd)
		if len(evs) == 0 {
			t.Fatal("no ack")
		}
		for _, ev := range evs {
			if err := aeptest.ValidateEvent(ev); err != nil {
				t.Fatalf("%v: %s", err, ev.Raw())
			}
			if err := sc.Check(ev); err != nil {
				t.Fatalf("%v: %s", err, ev.Raw())
			}
		}
		switch evs[0].Type() {
		case "control.rejected":
			if len(evs) != 1 {
				t.Fatalf("a nack comes alone, got %v", types(evs))
			}
			if q2 := h.session(name).Requests[0]; q2.State != StatePending {
				t.Fatalf("a nacked request stays pending, got %s", q2.State)
			}
		case "control.accepted":
			if len(evs) < 3 || evs[1].Type() != "attention.answered" || evs[2].Type() != "attention.resolved" {
				t.Fatalf("accepted without its outcome: %v", types(evs))
			}
			if name == ScenarioPermission {
				var ad aep.Answered
				if err := evs[1].DecodeData(&ad); err != nil {
					t.Fatal(err)
				}
				var in aep.Respond
				_ = cmd.DecodeData(&in)
				named := in.Answer.Option == "allow" ||
					(in.Answer.Option == "" && in.Answer.Text != nil && matchesAllow(*in.Answer.Text))
				if ad.Answer.Option == "allow" && !named {
					t.Fatalf("permission granted by %s", answer)
				}
			}
		default:
			t.Fatalf("first event is %s, not an ack", evs[0].Type())
		}
		if again := h.send(cmd); len(again) != 1 || string(again[0].Raw()) != string(evs[0].Raw()) {
			t.Fatalf("redelivery: want the recorded ack alone, got %v", types(again))
		}
	})
}

func matchesAllow(text string) bool {
	t := strings.TrimSpace(text)
	return strings.EqualFold(t, "allow") || strings.EqualFold(t, "Allow once")
}

// FuzzHandleFrame feeds arbitrary frames; the agent never panics and only
// a ping gets a reply.
func FuzzHandleFrame(f *testing.F) {
	for _, s := range []string{`{"type":"ping","t":1}`, `{"type":"hello"}`, `{"type":"control.cancel"}`,
		`{"aep":"0.1","id":"x","type":"control.cancel","source":"s","agent":"a","session":"s","data":{"scope":"run"}}`, `[]`, `nul`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h := newHarness(t, []string{ScenarioStandby}, nil)
		reply := h.a.handleFrame(b)
		if reply != nil && !strings.Contains(string(reply), `"pong"`) {
			t.Fatalf("unexpected reply %s", reply)
		}
		h.take()
	})
}
