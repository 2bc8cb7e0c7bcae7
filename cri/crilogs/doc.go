// Package crilogs reads and rotates container log files in the CRI format
// (one record per line), as the kubelet's pkg/kubelet/logs and
// kuberuntime/logs do, in bounded memory:
//
//   - Tail finds the last n lines by reading the files backwards (the
//     current file, then the rotated ones, newest first) and returns a
//     streaming reader from there: a tail of a 300 MB log reads a few
//     blocks, never the file.
//   - Follower reads a log as it grows, in bounded batches, and moves on to
//     the new file when the one it reads is rotated away.
//   - Manager rotates the logs of running containers as the kubelet's
//     containerLogManager does (--container-log-max-size,
//     --container-log-max-files): the current file is renamed to
//     <path>.<timestamp>, the runtime reopens the log (CRI
//     ReopenContainerLog), older rotated files are gzip-compressed and the
//     oldest removed.
package crilogs
