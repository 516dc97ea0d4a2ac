package stats

import "testing"

func TestQuantile(t *testing.T) {
	twenty := make([]float64, 20)
	for i := range twenty {
		twenty[i] = float64(20 - i) // 20..1, unsorted
	}
	for _, tt := range []struct {
		xs   []float64
		q    float64
		want float64
	}{
		{nil, 0.5, 0},
		{[]float64{7}, 0.99, 7},
		{[]float64{3, 1, 2}, 0.5, 2},
		{[]float64{4, 1, 3, 2}, 0.5, 2},
		{twenty, 0.5, 10},
		{twenty, 0.99, 20},
		{twenty, 0.95, 19},
		{twenty, 0, 1},
		{twenty, 1, 20},
	} {
		if got := Quantile(tt.xs, tt.q); got != tt.want {
			t.Errorf("Quantile(%v, %v) = %v, want %v", tt.xs, tt.q, got, tt.want)
		}
	}
	if twenty[0] != 20 {
		t.Error("Quantile sorted its argument")
	}
	if m := Mean([]float64{1, 2, 3, 6}); m != 3 {
		t.Errorf("Mean = %v", m)
	}
}
