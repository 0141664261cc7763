package browser

// FileStatus is how a file operation ended.
type FileStatus string

// The statuses of a BrowserFileOutcome.
const (
	FileCompleted   FileStatus = "completed"
	FileRefused     FileStatus = "refused"
	FileUnknown     FileStatus = "unknown"
	FileInterrupted FileStatus = "interrupted"
)

// FileEffect is what a file operation did to the application.
type FileEffect string

// The effects of a BrowserFileOutcome.
const (
	EffectCompleted FileEffect = "completed"
	EffectNone      FileEffect = "none"
	EffectUnknown   FileEffect = "unknown"
)

// FileCleanup is how far the driver cleaned up after a file operation.
type FileCleanup string

// The cleanups of a BrowserFileOutcome.
const (
	CleanupNotStarted FileCleanup = "not_started"
	CleanupPending    FileCleanup = "pending"
	CleanupCompleted  FileCleanup = "completed"
)

// BrowserFileOutcome is what upload_file and download_file return. The valid
// status/effect pairs are completed/completed, refused/none, unknown/unknown,
// interrupted/none and interrupted/unknown. Only completed makes the call's
// output ok; otherwise the outcome is reported with ok false and the
// remaining browser calls of the response are skipped. An outcome does not
// prove that a later form submission or business operation succeeded.
type BrowserFileOutcome struct {
	// Version is 1.
	Version int         `json:"version"`
	Status  FileStatus  `json:"status"`
	Effect  FileEffect  `json:"effect"`
	Cleanup FileCleanup `json:"cleanup"`
}

func checkFileOutcome(o BrowserFileOutcome) (BrowserFileOutcome, error) {
	if o.Version != 1 {
		return BrowserFileOutcome{}, invalidResult("file outcome version is %d, not 1", o.Version)
	}
	valid := false
	switch o.Status {
	case FileCompleted:
		valid = o.Effect == EffectCompleted
	case FileRefused:
		valid = o.Effect == EffectNone
	case FileUnknown:
		valid = o.Effect == EffectUnknown
	case FileInterrupted:
		valid = o.Effect == EffectNone || o.Effect == EffectUnknown
	}
	if !valid {
		return BrowserFileOutcome{}, invalidResult("file outcome status %q with effect %q is not a valid combination", o.Status, o.Effect)
	}
	switch o.Cleanup {
	case CleanupNotStarted, CleanupPending, CleanupCompleted:
	default:
		return BrowserFileOutcome{}, invalidResult("file outcome cleanup %q is not not_started, pending or completed", o.Cleanup)
	}
	return o, nil
}
