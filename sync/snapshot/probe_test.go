package snapshot

import (
	"context"
	"strings"
	"testing"
)

// TestProbeS3: usersync check's probe writes and removes a
// file in the deployment's prefix of a bucket, leaving nothing, and fails
// on a bucket that does not exist, naming the folder.
func TestProbeS3(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fake := newFakeS3(t, "snapshots")
	opts := S3Options{Endpoint: fake.URL, Region: "us-east-1", AccessKeyID: "AKIDTEST", SecretAccessKey: "secret", PathStyle: true}
	d, err := ParseDestination("s3://snapshots/prod", opts)
	if err != nil {
		t.Fatal(err)
	}
	folder, err := Probe(ctx, d, "usersync")
	if err != nil || folder != "s3://snapshots/prod/usersync" {
		t.Fatalf("Probe: %q, %v", folder, err)
	}
	if left, err := d.List(ctx, ""); err != nil || len(left) != 0 {
		t.Errorf("the probe left %v (%v)", left, err)
	}
	missing, err := ParseDestination("s3://no-such-bucket/prod", opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Probe(ctx, missing, "usersync"); err == nil || !strings.Contains(err.Error(), "writing to s3://no-such-bucket/prod/usersync") {
		t.Errorf("Probe of a missing bucket: %v", err)
	}
}
