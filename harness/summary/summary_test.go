package summary

import (
	"testing"

	"lnk.dev/linkharness/harness/model"
	"lnk.dev/linkharness/store/event"
)

// What a summary's calls cost together: the sum of what the provider
// reported where it reported every one, else nothing reported, and the
// tokens priced.
func TestSpent(t *testing.T) {
	reported := func(usd float64) model.Response {
		return model.Response{Usage: event.Usage{Input: 1}, Cost: model.Cost{USD: usd, Reported: true}}
	}
	priced := model.Response{Usage: event.Usage{Input: 1}}
	for _, tc := range []struct {
		name  string
		calls []model.Response
		want  model.Cost
	}{
		{"none", nil, model.Cost{}},
		{"one reported", []model.Response{reported(0.25)}, model.Cost{USD: 0.25, Reported: true}},
		{"one reported as nothing", []model.Response{reported(0)}, model.Cost{Reported: true}},
		{"two reported", []model.Response{reported(0.25), reported(0.5)}, model.Cost{USD: 0.75, Reported: true}},
		{"reported, then not", []model.Response{reported(0.25), priced}, model.Cost{}},
		{"not, then reported", []model.Response{priced, reported(0.25)}, model.Cost{}},
		{"not, then reported twice", []model.Response{priced, reported(0.25), reported(0.5)}, model.Cost{}},
	} {
		var u Spent
		for i := range tc.calls {
			u.Add(&tc.calls[i])
		}
		if u.Cost != tc.want || u.Input != int64(len(tc.calls)) {
			t.Errorf("%s: %+v, want %+v", tc.name, u, tc.want)
		}
	}
}
