package tools

// ReadFile reads a regular file of the workspace of at most maxBytes, for
// tools in sub-packages that read files other than text (pdf_read,
// image_read). A path outside the workspace, a missing, special or too
// large file is a Result for the model (res non-nil); err is the harness's
// fault (no workspace).
func ReadFile(env Env, rel string, maxBytes int64) (data []byte, res *Result, err error) {
	return readRegular(env, rel, maxBytes, " of this tool")
}

// readRegular reads a regular workspace file of at most maxBytes; tooLarge
// ends the sentence that refuses a larger one.
func readRegular(env Env, rel string, maxBytes int64, tooLarge string) (data []byte, res *Result, err error) {
	pl, res, err := openPath(env, rel)
	if res != nil || err != nil {
		return nil, res, err
	}
	defer pl.root.Close()
	fail := func(format string, a ...any) ([]byte, *Result, error) {
		r := Failf(format, a...)
		return nil, &r, nil
	}
	fi, err := pl.root.Stat(pl.rel)
	switch {
	case err != nil:
		return fail("%s", describePathErr(rel, err))
	case fi.IsDir():
		return fail("%s is a directory; use workspace_list", rel)
	case !fi.Mode().IsRegular():
		return fail("%s is not a regular file", rel)
	case fi.Size() > maxBytes:
		return fail("%s is %d bytes, over the %d MiB limit%s", rel, fi.Size(), maxBytes>>20, tooLarge)
	}
	data, err = pl.root.ReadFile(pl.rel)
	if err != nil {
		return fail("%s", describePathErr(rel, err))
	}
	return data, nil, nil
}
