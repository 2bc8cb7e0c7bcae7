package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// UnmarshalJSON reads a --config file's values. Durations are written as
// the flags take them ("30s", "500ms"), as in a kubelet configuration file;
// a bare number is read as nanoseconds. Unknown keys are rejected.
func (c *Config) UnmarshalJSON(data []byte) error {
	type plain Config // no methods: no recursion
	aux := struct {
		*plain
		RuntimeRequestTimeout     *duration `json:"runtimeRequestTimeout"`
		SyncFrequency             *duration `json:"syncFrequency"`
		RelistPeriod              *duration `json:"relistPeriod"`
		NodeStatusUpdateFrequency *duration `json:"nodeStatusUpdateFrequency"`
	}{plain: (*plain)(c)}
	// Strict, as the file is: a misspelt key is an error, not a default.
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&aux); err != nil {
		return err
	}
	for _, d := range []struct {
		from *duration
		to   *time.Duration
	}{
		{aux.RuntimeRequestTimeout, &c.RuntimeRequestTimeout},
		{aux.SyncFrequency, &c.SyncFrequency},
		{aux.RelistPeriod, &c.RelistPeriod},
		{aux.NodeStatusUpdateFrequency, &c.NodeStatusUpdateFrequency},
	} {
		if d.from != nil {
			*d.to = time.Duration(*d.from)
		}
	}
	return nil
}

// duration is a time.Duration written as "30s" (or nanoseconds).
type duration time.Duration

func (d *duration) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		var ns int64
		if err := json.Unmarshal(data, &ns); err != nil {
			return fmt.Errorf("want a duration such as \"30s\", got %s", data)
		}
		*d = duration(ns)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration such as \"30s\": %w", err)
	}
	*d = duration(v)
	return nil
}
