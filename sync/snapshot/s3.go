package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/s3utils"
)

// S3Options configures an S3-compatible destination. Nothing is read from
// the environment here: the CLI maps its variables onto these fields.
type S3Options struct {
	// Endpoint is the server, as host[:port] (HTTPS) or a URL whose scheme
	// says http or https. Default: s3.amazonaws.com.
	Endpoint string
	// Region of the bucket; empty lets the client discover it.
	Region string
	// AccessKeyID and SecretAccessKey (and SessionToken for temporary
	// credentials) sign requests. When AccessKeyID is empty, credentials come
	// from the instance or pod role (IAM).
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
	// PathStyle addresses buckets as endpoint/bucket rather than
	// bucket.endpoint, as MinIO and most self-hosted servers need.
	PathStyle bool
	// PartSize is the multipart upload's part size (default DefaultPartSize,
	// at least MinPartSize). One part per file being written is held in
	// memory.
	PartSize int64
}

// Part sizes of S3 multipart uploads.
const (
	DefaultPartSize = 16 << 20
	MinPartSize     = 5 << 20 // S3's minimum for every part but the last
)

// String describes the options with the secrets redacted.
func (o S3Options) String() string {
	secret := ""
	if o.SecretAccessKey != "" {
		secret = "REDACTED"
	}
	return fmt.Sprintf("endpoint=%s region=%s access_key_id=%s secret_access_key=%s path_style=%t part_size=%d",
		o.Endpoint, o.Region, o.AccessKeyID, secret, o.PathStyle, o.PartSize)
}

// S3 is a Destination in an S3-compatible bucket, under a key prefix. Each
// object is a streamed multipart upload, so at most one part per file is in
// memory and an object appears only once complete.
type S3 struct {
	client   *minio.Client
	bucket   string
	prefix   string // without leading or trailing slash; may be empty
	partSize uint64
}

var _ Destination = (*S3)(nil)

// NewS3 returns a destination in bucket under prefix.
func NewS3(bucket, prefix string, opts S3Options) (*S3, error) {
	if bucket == "" {
		return nil, errors.New("S3 destination needs a bucket")
	}
	host, secure, err := parseEndpoint(opts.Endpoint)
	if err != nil {
		return nil, err
	}
	if opts.PartSize == 0 {
		opts.PartSize = DefaultPartSize
	}
	if opts.PartSize < MinPartSize {
		return nil, fmt.Errorf("S3 part size must be at least %d bytes, not %d", MinPartSize, opts.PartSize)
	}
	creds := credentials.NewIAM("")
	if opts.AccessKeyID != "" {
		creds = credentials.NewStaticV4(opts.AccessKeyID, opts.SecretAccessKey, opts.SessionToken)
	}
	lookup := minio.BucketLookupAuto
	if opts.PathStyle {
		lookup = minio.BucketLookupPath
	}
	client, err := minio.New(host, &minio.Options{Creds: creds, Secure: secure, Region: opts.Region, BucketLookup: lookup})
	if err != nil {
		return nil, fmt.Errorf("creating the S3 client for %s: %w", host, err)
	}
	return &S3{client: client, bucket: bucket, prefix: strings.Trim(prefix, "/"), partSize: uint64(opts.PartSize)}, nil
}

// parseEndpoint splits an endpoint into host[:port] and whether it uses TLS.
func parseEndpoint(endpoint string) (host string, secure bool, err error) {
	if endpoint == "" {
		return "s3.amazonaws.com", true, nil
	}
	if !strings.Contains(endpoint, "://") {
		return endpoint, true, nil
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", false, fmt.Errorf("parsing the S3 endpoint: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return "", false, fmt.Errorf("S3 endpoint %q must be host[:port] or http(s)://host[:port]", endpoint)
	}
	return u.Host, u.Scheme == "https", nil
}

// ErrCredentialsInURL refuses an s3:// URL with user:password@ in it: the
// URL is printed in logs and status, the credentials belong in S3Options.
var ErrCredentialsInURL = errors.New("must not hold credentials (user:password@)")

// CheckDestination checks the form of a destination URL without touching it:
// the scheme, an s3:// URL's bucket name (by S3's rules, so a bad one fails
// at start rather than at the first snapshot) and the absence of
// credentials. Its errors never quote what could be a password.
func CheckDestination(raw string) error {
	switch {
	case raw == "":
		return errors.New("snapshot destination is empty")
	case strings.HasPrefix(raw, "s3://"):
		_, _, err := splitS3(raw)
		return err
	case strings.HasPrefix(raw, "file://"):
		u, err := url.Parse(raw)
		if err != nil || (u.Host != "" && u.Host != "localhost") || u.Path == "" {
			return errors.New("file:// URLs must name a local path, like file:///var/lib/usersync/snapshots")
		}
	case strings.Contains(raw, "://"):
		scheme, _, _ := strings.Cut(raw, "://")
		return fmt.Errorf("unsupported scheme %q (use s3://bucket/prefix or a folder)", scheme)
	}
	return nil
}

// splitS3 splits s3://bucket/prefix and checks the bucket's name. A ':' or
// '@' before the first '/' is taken for credentials: bucket names hold
// neither, and a password may hold a '/'.
func splitS3(raw string) (bucket, prefix string, err error) {
	bucket, prefix, _ = strings.Cut(strings.TrimPrefix(raw, "s3://"), "/")
	if strings.ContainsAny(bucket, ":@") {
		return "", "", ErrCredentialsInURL
	}
	if bucket == "" {
		return "", "", errors.New("S3 destination needs a bucket")
	}
	if err := s3utils.CheckValidBucketNameStrict(bucket); err != nil {
		return "", "", fmt.Errorf("bucket name %q is invalid: %s (S3 wants 3 to 63 lowercase letters, digits, dots and hyphens, starting and ending with a letter or digit, not an IP address)",
			bucket, strings.ToLower(err.Error()))
	}
	return bucket, prefix, nil
}

// ParseDestination returns the destination a URL names: s3://bucket/prefix
// (with s3 for the endpoint and credentials), file:///path, or a plain
// folder path. It checks raw with CheckDestination first.
func ParseDestination(raw string, s3 S3Options) (Destination, error) {
	if err := CheckDestination(raw); err != nil {
		return nil, fmt.Errorf("snapshot destination: %w", err)
	}
	switch {
	case strings.HasPrefix(raw, "s3://"):
		bucket, prefix, err := splitS3(raw)
		if err != nil {
			return nil, err
		}
		return NewS3(bucket, prefix, s3)
	case strings.HasPrefix(raw, "file://"):
		u, err := url.Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("parsing snapshot destination: %w", err)
		}
		return NewLocal(u.Path)
	}
	return NewLocal(raw)
}

// String returns s3://bucket/prefix.
func (d *S3) String() string {
	if d.prefix == "" {
		return "s3://" + d.bucket
	}
	return "s3://" + d.bucket + "/" + d.prefix
}

func (d *S3) key(name string) string {
	if d.prefix == "" {
		return name
	}
	return d.prefix + "/" + name
}

func (d *S3) name(key string) string {
	if d.prefix == "" {
		return key
	}
	return strings.TrimPrefix(key, d.prefix+"/")
}

// errAborted ends an upload whose object is being discarded. It must not be
// io.EOF or io.ErrUnexpectedEOF, which the client takes for the end of the
// data and would complete the upload with.
var errAborted = errors.New("upload aborted")

// Create starts a streaming multipart upload of name.
func (d *S3) Create(ctx context.Context, name string) (Object, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	uctx, cancel := context.WithCancel(ctx)
	o := &s3Object{pw: pw, cancel: cancel, done: make(chan error, 1), key: d.key(name)}
	opts := minio.PutObjectOptions{
		PartSize:    d.partSize,
		ContentType: contentType(name),
		// Unsigned payload: streaming-signed chunks cost a SHA-256 pass over
		// every byte and are not understood by every S3-compatible server;
		// TLS protects the payload.
		DisableContentSha256: true,
	}
	go func() {
		_, err := d.client.PutObject(uctx, d.bucket, o.key, pr, -1, opts)
		_ = pr.CloseWithError(err) // always nil; unblocks a writer if the upload failed first
		o.done <- err
	}()
	return o, nil
}

func contentType(name string) string {
	switch path.Ext(name) {
	case ".parquet":
		return "application/vnd.apache.parquet"
	case ".json":
		return "application/json"
	}
	return "application/octet-stream"
}

// s3Object is an upload in progress.
type s3Object struct {
	pw     *io.PipeWriter
	cancel context.CancelFunc
	done   chan error
	key    string
	ended  bool
}

func (o *s3Object) Write(p []byte) (int, error) { return o.pw.Write(p) }

// Commit ends the data and waits for the upload to complete.
func (o *s3Object) Commit(ctx context.Context) error {
	if o.ended {
		return errors.New("object already committed or aborted")
	}
	o.ended = true
	defer o.cancel()
	_ = o.pw.Close() // a PipeWriter's Close never fails
	select {
	case err := <-o.done:
		if err != nil {
			return fmt.Errorf("uploading %s: %w", o.key, err)
		}
		return nil
	case <-ctx.Done():
		o.cancel()
		<-o.done //nolint:errcheck // the cancellation's error; ctx's is the one to report
		return fmt.Errorf("uploading %s: %w", o.key, ctx.Err())
	}
}

// Abort fails the upload, which the client then aborts on the server.
func (o *s3Object) Abort(_ context.Context) error {
	if o.ended {
		return nil
	}
	o.ended = true
	_ = o.pw.CloseWithError(errAborted) // always nil
	o.cancel()
	<-o.done //nolint:errcheck // the upload fails, as asked
	return nil
}

// Open reads a committed object.
func (d *S3) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	obj, err := d.client.GetObject(ctx, d.bucket, d.key(name), minio.GetObjectOptions{})
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", name, err)
	}
	if _, err := obj.Stat(); err != nil { // GetObject is lazy: surface "not found" here
		_ = obj.Close() // Stat's error is the one worth reporting
		return nil, fmt.Errorf("opening %s: %w", name, err)
	}
	return obj, nil
}

// List lists the objects under prefix and the unfinished uploads (Partial).
func (d *S3) List(ctx context.Context, prefix string) ([]Entry, error) {
	var out []Entry
	for o := range d.client.ListObjects(ctx, d.bucket, minio.ListObjectsOptions{Prefix: d.key(prefix), Recursive: true}) {
		if o.Err != nil {
			return nil, fmt.Errorf("listing %s: %w", d, o.Err)
		}
		out = append(out, Entry{Name: d.name(o.Key), Size: o.Size})
	}
	for u := range d.client.ListIncompleteUploads(ctx, d.bucket, d.key(prefix), true) {
		if u.Err != nil {
			switch minio.ToErrorResponse(u.Err).Code {
			case "NoSuchUpload", "NotImplemented":
				// Some S3-compatible servers answer so when there are no
				// uploads to list, or cannot list them.
				return out, nil
			}
			return nil, fmt.Errorf("listing unfinished uploads of %s: %w", d, u.Err)
		}
		out = append(out, Entry{Name: d.name(u.Key), Size: u.Size, Partial: true})
	}
	return out, nil
}

// Remove deletes an object, or aborts the unfinished uploads of a partial
// entry.
func (d *S3) Remove(ctx context.Context, e Entry) error {
	if err := checkName(e.Name); err != nil {
		return err
	}
	var err error
	if e.Partial {
		err = d.client.RemoveIncompleteUpload(ctx, d.bucket, d.key(e.Name))
	} else {
		err = d.client.RemoveObject(ctx, d.bucket, d.key(e.Name), minio.RemoveObjectOptions{})
	}
	if err != nil && minio.ToErrorResponse(err).Code != minio.NoSuchKey {
		return fmt.Errorf("removing %s: %w", e.Name, err)
	}
	return nil
}

// SetCurrent copies files server-side to link/<base name>, then removes the
// other objects under link/, because S3 has no links. Each object is replaced
// atomically, but a listing during the copies may mix files of two snapshots.
func (d *S3) SetCurrent(ctx context.Context, link, _ string, files []string) error {
	if err := checkName(link); err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, f := range files {
		if err := checkName(f); err != nil {
			return err
		}
		dst := link + "/" + path.Base(f)
		_, err := d.client.CopyObject(ctx, minio.CopyDestOptions{Bucket: d.bucket, Object: d.key(dst)},
			minio.CopySrcOptions{Bucket: d.bucket, Object: d.key(f)})
		if err != nil {
			return fmt.Errorf("copying %s to %s: %w", f, dst, err)
		}
		keep[dst] = true
	}
	entries, err := d.List(ctx, link+"/")
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !keep[e.Name] || e.Partial {
			if err := d.Remove(ctx, e); err != nil {
				return err
			}
		}
	}
	return nil
}
