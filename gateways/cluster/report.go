package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// What crew doctor and serve say of the cluster, one line each.

// Report is doctor's line on the log on the cluster cc names (its URL
// shown without its password): it connects on its own (the server may
// hold the home) and says how the log is kept there and who shares it,
// read only, or why it could not connect.
func Report(ctx context.Context, cc events.ClientConfig) string {
	head := "event log: NATS " + events.RedactURL(cc.URL) + ": "
	nc, err := events.Connect(cc)
	if err != nil {
		return head + err.Error()
	}
	defer nc.Close()
	return head + Replication(ctx, nc) + "; " + Members(ctx, nc)
}

// Members says how many crew processes share the cluster and which leads.
func Members(ctx context.Context, nc *nats.Conn) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ls, err := events.OpenLeases(ctx, nc)
	if err != nil {
		return "crew processes: " + err.Error()
	}
	procs, err := ls.Holders(ctx, processKey("*"))
	if err != nil {
		return "crew processes: " + err.Error()
	}
	line := fmt.Sprintf("crew processes: %d", len(procs))
	if leader, ok, err := ls.Holder(ctx, "leader"); err == nil && ok {
		line += " (leader " + leader + ")"
	} else if len(procs) > 0 {
		line += " (no leader at the moment)"
	}
	return line
}

// Replication says how the log is kept on the cluster: servers known,
// the stream's replicas and which of them are current, and the last raise
// of its replicas.
func Replication(ctx context.Context, nc *nats.Conn) string {
	js, err := jetstream.New(nc)
	if err != nil {
		return err.Error()
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	stream, err := js.Stream(ctx, events.StreamName)
	if err != nil {
		return fmt.Sprintf("cluster %q of %d servers, stream %s: %v", nc.ConnectedClusterName(), events.ClusterSize(nc), events.StreamName, err)
	}
	si := stream.CachedInfo()
	line := fmt.Sprintf("cluster %q of %d servers, stream %s with %d replicas", nc.ConnectedClusterName(), events.ClusterSize(nc), events.StreamName, si.Config.Replicas)
	if c := si.Cluster; c != nil && c.Leader != "" {
		line += " (leader " + c.Leader
		for _, r := range c.Replicas {
			state := "current"
			if !r.Current {
				state = "behind"
			}
			if r.Offline {
				state = "offline"
			}
			line += ", " + r.Name + " " + state
		}
		line += ")"
	}
	if si.Config.Replicas < events.ClusterReplicas && events.ClusterSize(nc) >= events.ClusterReplicas {
		line += fmt.Sprintf(", short of %d replicas: not raised yet (the cluster could not place them at the last start)", events.ClusterReplicas)
	}
	return line + raisedNote(ctx, stream) + bucketsNote(ctx, js, nc)
}

// bucketsNote tells the replicas of the KV buckets and the object store
// beside the log, and
// which are short of 3 on a cluster of enough servers.
func bucketsNote(ctx context.Context, js jetstream.JetStream, nc *nats.Conn) string {
	var parts []string
	for _, name := range []string{"KV_" + events.LeaseBucket, "KV_" + events.ScriptBucket, "KV_" + events.SessionBucket, "OBJ_" + events.SpillBucket} {
		s, err := js.Stream(ctx, name)
		if err != nil {
			continue // not made yet
		}
		part := fmt.Sprintf("%s %d", name[strings.Index(name, "_")+1:], s.CachedInfo().Config.Replicas)
		if s.CachedInfo().Config.Replicas < events.ClusterReplicas && events.ClusterSize(nc) >= events.ClusterReplicas {
			part += " (short of 3)"
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return ""
	}
	return "; buckets " + strings.Join(parts, ", ")
}

// raisedNote tells the last raise of the stream's replicas recorded
// (stream_replicas_raised), if any.
func raisedNote(ctx context.Context, stream jetstream.Stream) string {
	msg, err := stream.GetLastMsgForSubject(ctx, events.ClusterScope.Filter())
	if err != nil {
		return ""
	}
	env, err := events.DecodeStored(msg.Subject, msg.Sequence, msg.Data)
	if err != nil {
		return ""
	}
	e, err := env.Decode()
	r, ok := e.(*events.StreamReplicasRaised)
	if err != nil || !ok {
		return ""
	}
	return fmt.Sprintf(", raised from %d to %d replicas on %s", r.From, r.To, env.Time.UTC().Format(time.RFC3339))
}

// Describe is what serve prints about where its log is: on an external
// server or cluster (url, shown without its password) its replication,
// on the embedded server where it listens ("" when in-process only).
func Describe(ctx context.Context, st *events.Store, url string) string {
	if st.Server() == nil {
		return fmt.Sprintf("event log on NATS %s: %s", events.RedactURL(url), Replication(ctx, st.Conn()))
	}
	if u := st.Server().ClientURL(); u != "" {
		return fmt.Sprintf("embedded NATS is reachable at %s: nats --server %s stream info CREW", u, u)
	}
	return ""
}
