package metrics

import "net/http"

// webhookVerdicts names the webhook receiver's answers.
var webhookVerdicts = map[int]string{
	http.StatusNoContent:             "woke",
	http.StatusAccepted:              "ignored",
	http.StatusUnauthorized:          "rejected",
	http.StatusBadRequest:            "bad_request",
	http.StatusRequestEntityTooLarge: "too_large",
	http.StatusMethodNotAllowed:      "bad_method",
}

// WebhookHandler counts the deliveries h answers, by verdict, read from the
// status code h writes.
func (m *Metrics) WebhookHandler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(rec, r)
		verdict, ok := webhookVerdicts[rec.code]
		if !ok {
			verdict = "other"
		}
		m.webhooks.WithLabelValues(verdict).Inc()
	})
}

type statusRecorder struct {
	http.ResponseWriter
	code    int
	written bool
}

func (s *statusRecorder) WriteHeader(code int) {
	if !s.written {
		s.code, s.written = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	s.written = true
	return s.ResponseWriter.Write(b)
}
