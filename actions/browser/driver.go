package browser

import "context"

// Driver is the least a browser driver implements: reading the state. Each
// other method is its own one-method interface below; a driver implements
// only those it offers, and the toolset finds them with type assertions
// (lima's pkg/driver does the same with its optional roles).
//
// Every method receives the call's context and should return promptly when
// it is done, inclusive of navigation, typing and screenshots. Text results
// are *string: nil for no result. Return a *BrowserError (wrapped or not)
// for a recoverable problem whose text is safe to show the model, such as a
// stale ref; any other error becomes a generic failure. Arguments are the
// driver's own copy, already validated.
type Driver interface {
	StateReader
}

// StateReader reports the browser's tabs. list_tabs is derived from it;
// never implement list_tabs.
type StateReader interface {
	State(ctx context.Context) (State, error)
}

// The default methods.
type (
	Navigator interface {
		Navigate(ctx context.Context, args NavigateArgs) (*string, error)
	}
	PageReader interface {
		ReadPage(ctx context.Context, args ReadPageArgs) (ReadResult, error)
	}
	// PageTextReader's structured read must have no elements.
	PageTextReader interface {
		GetPageText(ctx context.Context, args GetPageTextArgs) (ReadResult, error)
	}
	Finder interface {
		Find(ctx context.Context, args FindArgs) (ReadResult, error)
	}
	Clicker interface {
		Click(ctx context.Context, args ClickArgs) (*string, error)
	}
	Typer interface {
		Type(ctx context.Context, args TypeArgs) (*string, error)
	}
	KeyPresser interface {
		Key(ctx context.Context, args KeyArgs) (*string, error)
	}
	Scroller interface {
		Scroll(ctx context.Context, args ScrollArgs) (*string, error)
	}
	TargetScroller interface {
		ScrollTo(ctx context.Context, args ScrollToArgs) (*string, error)
	}
	TextWaiter interface {
		WaitFor(ctx context.Context, args WaitForArgs) (*string, error)
	}
	OptionSelector interface {
		SelectOption(ctx context.Context, args SelectOptionArgs) (*string, error)
	}
	Hoverer interface {
		Hover(ctx context.Context, args HoverArgs) (*string, error)
	}
	Screenshotter interface {
		Screenshot(ctx context.Context, args ScreenshotArgs) (Image, error)
	}
	// Zoomer crops the screenshot to the region and checks its bounds.
	Zoomer interface {
		Zoom(ctx context.Context, args ZoomArgs) (Image, error)
	}
	TabOpener interface {
		NewTab(ctx context.Context, args NewTabArgs) (*string, error)
	}
	TabSwitcher interface {
		SwitchTab(ctx context.Context, args SwitchTabArgs) (*string, error)
	}
	TabCloser interface {
		CloseTab(ctx context.Context, args CloseTabArgs) (*string, error)
	}
)

// The scoped-read and pointer methods, off unless selected. Coordinates are
// CSS pixels of the whole visible area of the page; the driver checks the
// current bounds.
type (
	ScopedPageReader interface {
		ReadPageScoped(ctx context.Context, args ReadPageScopedArgs) (*BrowserScopedReadV1, error)
	}
	PointClicker interface {
		ClickAt(ctx context.Context, args ClickAtArgs) (*string, error)
	}
	PathDragger interface {
		DragPath(ctx context.Context, args DragPathArgs) (*string, error)
	}
	KeyHolder interface {
		HoldKeys(ctx context.Context, args HoldKeysArgs) (*string, error)
	}
	PointHoverer interface {
		HoverAt(ctx context.Context, args HoverAtArgs) (*string, error)
	}
	// CheckedSetter acts on the original target even when nothing changes,
	// and refuses a stale or replaced control.
	CheckedSetter interface {
		SetChecked(ctx context.Context, args SetCheckedArgs) (*string, error)
	}
)

// The diagnostics, script and file methods, off unless selected.
type (
	// DiagnosticsReader returns a structured read with no elements; it
	// filters private data and bounds the history (no raw headers, cookies,
	// credentials or unfiltered console messages).
	DiagnosticsReader interface {
		ReadDiagnostics(ctx context.Context, args ReadDiagnosticsArgs) (*BrowserReadV1, error)
	}
	// ScriptRunner runs the source with the page's privileges and returns
	// its text result ("" is a valid one).
	ScriptRunner interface {
		RunScript(ctx context.Context, args RunScriptArgs) (string, error)
	}
	// FileUploader and FileDownloader accept only grants the caller issued;
	// the grant's owner approves the file separately, re-checks the grant,
	// limits its size and allows one use.
	FileUploader interface {
		UploadFile(ctx context.Context, args UploadFileArgs) (BrowserFileOutcome, error)
	}
	FileDownloader interface {
		DownloadFile(ctx context.Context, args DownloadFileArgs) (BrowserFileOutcome, error)
	}
)

// Text returns a pointer to s, for a method's text result.
func Text(s string) *string { return &s }
