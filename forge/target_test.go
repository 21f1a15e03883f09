package forge

import "testing"

func TestParseTarget(t *testing.T) {
	tests := []struct {
		in      string
		want    Target
		wantErr bool
	}{
		{in: "acme/widgets#7", want: Target{Owner: "acme", Repo: "widgets", Number: 7}},
		{in: "a.b/c-d_e#12", want: Target{Owner: "a.b", Repo: "c-d_e", Number: 12}},
		{in: "acme/widgets", wantErr: true},
		{in: "acme#7", wantErr: true},
		{in: "acme/widgets#0", wantErr: true},
		{in: "acme/widgets#x", wantErr: true},
		{in: "acme/wid/gets#1", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseTarget(tt.in)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("ParseTarget(%q) = %v, %v; want %v, err %v", tt.in, got, err, tt.want, tt.wantErr)
			}
		})
	}
}
