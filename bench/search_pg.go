package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentcore/sessionlog/stream"
)

// pgSearch times the search queries on PostgreSQL's full-text search, on
// a server of the run's own: every message of b's streams is loaded into
// a table with a tsvector of the 'simple' configuration (lower-cased
// words, no stemming: what our index's analyzer makes of them) under a
// GIN index, and each query ranks its matches by ts_rank, the best 20
// first. It says how the load went in note.
func pgSearch(ctx context.Context, b *stream.Backend, queries []string) (lat latencies, note string, err error) {
	pg, err := startPostgres(ctx)
	if err != nil {
		return nil, "", err
	}
	defer pg.stop()
	conn, err := pgx.Connect(ctx, pg.url)
	if err != nil {
		return nil, "", err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, `CREATE TABLE msgs (id text PRIMARY KEY, body text NOT NULL,
		tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', body)) STORED)`); err != nil {
		return nil, "", err
	}
	t0 := time.Now()
	n, err := pgCopyMessages(ctx, conn, b)
	if err != nil {
		return nil, "", err
	}
	loaded := time.Since(t0)
	t0 = time.Now()
	if _, err := conn.Exec(ctx, `CREATE INDEX msgs_tsv ON msgs USING GIN (tsv)`); err != nil {
		return nil, "", err
	}
	if _, err := conn.Exec(ctx, `VACUUM ANALYZE msgs`); err != nil {
		return nil, "", err
	}
	indexed := time.Since(t0)
	if _, err := conn.Exec(ctx, `SET statement_timeout = '60s'`); err != nil {
		return nil, "", err
	}
	for _, q := range queries {
		sql := `SELECT id FROM msgs, plainto_tsquery('simple', $1) q WHERE tsv @@ q ORDER BY ts_rank(tsv, q) DESC LIMIT 20`
		text := q
		if strings.HasPrefix(q, `"`) {
			sql = strings.Replace(sql, "plainto_tsquery", "phraseto_tsquery", 1)
			text = strings.Trim(q, `"`)
		}
		t := time.Now()
		rows, err := conn.Query(ctx, sql, text)
		if err != nil {
			return nil, "", err
		}
		for rows.Next() {
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, "", fmt.Errorf("bench: PostgreSQL: %q: %w", q, err)
		}
		lat = append(lat, time.Since(t))
	}
	return lat, fmt.Sprintf("PostgreSQL: %d messages copied in %.1f s, their GIN index built (and analyzed) in %.1f s", n, loaded.Seconds(), indexed.Seconds()), nil
}

// pgCopyMessages copies the text of every message of b's streams into
// msgs.
func pgCopyMessages(ctx context.Context, conn *pgx.Conn, b *stream.Backend) (int64, error) {
	scan := scanMessages(ctx, b)
	defer scan.Stop()
	return conn.CopyFrom(ctx, pgx.Identifier{"msgs"}, []string{"id", "body"}, pgx.CopyFromFunc(func() ([]any, error) {
		e, sid, err := scan.Next()
		if err != nil || e == nil {
			return nil, err
		}
		return []any{sid + "/" + e.ID, e.Message.Content.Text()}, nil
	}))
}
