"""pyautogui for agentd's code-execution mode.

The functions models write with PyAutoGUI, performed by agentd's own
executor: the same key names, Unicode typing, held modifiers and release on
error as the computer tool. Coordinates are those of the session's view (the
image the model sees, maybe scaled or cropped); agentd maps them to the
screen. A point outside the view raises, it is never clamped.
"""

import collections
import time as _time

import _agentd

__version__ = "0.9.54-agentd"

Point = collections.namedtuple("Point", "x y")
Size = collections.namedtuple("Size", "width height")

LEFT, MIDDLE, RIGHT, PRIMARY, SECONDARY = "left", "middle", "right", "primary", "secondary"

PAUSE = 0.1
FAILSAFE = True
MINIMUM_DURATION = 0.1
MINIMUM_SLEEP = 0.05
DARWIN_CATCH_UP_TIME = 0.01
LOG_SCREENSHOTS = False


class PyAutoGUIException(Exception):
    """The base of this module's exceptions."""


class FailSafeException(PyAutoGUIException):
    """The pointer was in a corner of the screen while FAILSAFE was on."""


class ImageNotFoundException(PyAutoGUIException):
    pass


class OutOfScreenError(PyAutoGUIException, ValueError):
    """A point outside the screen (the session's view)."""


_agentd.errors.update({"failsafe": FailSafeException, "bounds": OutOfScreenError, "value": ValueError})

FAILSAFE_POINTS = []
_size = Size(0, 0)


def _begin(head):
    """Called by the worker before each exec with the session's view."""
    global _size, FAILSAFE_POINTS
    v = head["view"]
    _size = Size(v["width"], v["height"])
    w, h = _size
    FAILSAFE_POINTS = [(0, 0), (0, h - 1), (w - 1, 0), (w - 1, h - 1)]


# pyautogui's key names, and the names agentd's executor knows them by.
_KEYS = {
    "\t": "Tab", "\n": "Return", "\r": "Return", " ": "space",
    "add": "KP_Add", "alt": "alt", "altleft": "Alt_L", "altright": "Alt_R", "apps": "Menu",
    "backspace": "BackSpace", "browserback": "XF86Back", "browserforward": "XF86Forward",
    "browserhome": "XF86HomePage", "browserrefresh": "XF86Refresh", "browsersearch": "XF86Search",
    "capslock": "Caps_Lock", "clear": "Clear", "command": "Super_L", "ctrl": "ctrl",
    "ctrlleft": "Control_L", "ctrlright": "Control_R", "decimal": "KP_Decimal", "del": "Delete",
    "delete": "Delete", "divide": "KP_Divide", "down": "Down", "end": "End", "enter": "Return",
    "esc": "Escape", "escape": "Escape", "execute": "Execute", "help": "Help", "home": "Home",
    "insert": "Insert", "launchmail": "XF86Mail", "left": "Left", "modechange": "Mode_switch",
    "multiply": "KP_Multiply", "nexttrack": "XF86AudioNext", "numlock": "Num_Lock",
    "option": "Alt_L", "optionleft": "Alt_L", "optionright": "Alt_R", "pagedown": "Next",
    "pageup": "Prior", "pause": "Pause", "pgdn": "Next", "pgup": "Prior",
    "playpause": "XF86AudioPlay", "prevtrack": "XF86AudioPrev", "print": "Print",
    "printscreen": "Print", "prntscrn": "Print", "prtsc": "Print", "prtscr": "Print",
    "return": "Return", "right": "Right", "scrolllock": "Scroll_Lock", "select": "Select",
    "separator": "KP_Separator", "shift": "shift", "shiftleft": "Shift_L", "shiftright": "Shift_R",
    "space": "space", "stop": "XF86AudioStop", "subtract": "KP_Subtract", "tab": "Tab", "up": "Up",
    "volumedown": "XF86AudioLowerVolume", "volumemute": "XF86AudioMute",
    "volumeup": "XF86AudioRaiseVolume", "win": "Super_L", "winleft": "Super_L", "winright": "Super_R",
}
_KEYS.update({"f%d" % i: "F%d" % i for i in range(1, 25)})
_KEYS.update({"num%d" % i: "KP_%d" % i for i in range(10)})
# pyautogui names without a key here: an error, never a silent no-op.
_UNSUPPORTED_KEYS = [
    "accept", "browserfavorites", "browserstop", "convert", "final", "fn", "hanguel", "hangul",
    "hanja", "junja", "kana", "kanji", "launchapp1", "launchapp2", "launchmediaselect",
    "nonconvert", "sleep", "yen",
]
KEYBOARD_KEYS = sorted(set(_KEYS) | set(_UNSUPPORTED_KEYS) | {chr(c) for c in range(0x21, 0x7F)})
KEY_NAMES = KEYBOARD_KEYS


def isValidKey(key):
    return _keyname(key, check=False) is not None


def _keyname(key, check=True):
    if not isinstance(key, str) or key == "":
        if check:
            raise ValueError("a key name must be a non-empty string, not %r" % (key,))
        return None
    if len(key) == 1 and key not in _KEYS:
        return key
    name = _KEYS.get(key.lower())
    if name is None and check:
        if key.lower() in _UNSUPPORTED_KEYS:
            raise ValueError("pyautogui key %r has no key on agentd's keyboard" % key)
        raise ValueError("unknown key name %r (see pyautogui.KEYBOARD_KEYS)" % key)
    return name


def _button(button):
    b = {1: "left", 2: "middle", 3: "right", "primary": "left", "secondary": "right"}.get(button, button)
    if b not in ("left", "middle", "right"):
        raise ValueError("button must be 'left', 'middle', 'right', 'primary' or 'secondary', not %r" % (button,))
    return b


def _coord(v, what):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError("%s must be a number, not %r" % (what, v))
    return int(v)


def _point(x, y):
    """pyautogui's ways of giving a point: x, y; (x, y); None for the
    current position. Image search by file name is not offered."""
    if isinstance(x, str):
        raise NotImplementedError("locating an image on the screen (%r) is not available in agentd's pyautogui" % x)
    if isinstance(x, (tuple, list)):
        if len(x) != 2:
            raise ValueError("a point needs 2 coordinates, got %r" % (x,))
        x, y = x
    if x is None or y is None:
        px, py = position()
        x = px if x is None else x
        y = py if y is None else y
    return _coord(x, "x"), _coord(y, "y")


def _act(action, _pause=True):
    _agentd.call({"op": "act", "action": action, "failsafe": bool(FAILSAFE)})
    _pause_after(_pause)


def _hold(down, key=None, button=None, _pause=True):
    head = {"op": "hold", "down": down, "failsafe": bool(FAILSAFE)}
    if key is not None:
        head["key"] = key
    else:
        head["button"] = button
    _agentd.call(head)
    _pause_after(_pause)


def _pause_after(_pause):
    if _pause and PAUSE:
        _time.sleep(PAUSE)


def size():
    """The screen's size as the model sees it: the session's view."""
    return _size


resolution = size


def position(x=None, y=None):
    """The pointer's position in the view; x or y, if given, replace it."""
    rep, _ = _agentd.call({"op": "position"})
    return Point(int(x) if x is not None else rep["x"], int(y) if y is not None else rep["y"])


def onScreen(x, y=None):
    x, y = _point(x, y)
    return 0 <= x < _size.width and 0 <= y < _size.height


def click(x=None, y=None, clicks=1, interval=0.0, button=PRIMARY, duration=0.0, tween=None,
          logScreenshot=None, _pause=True):
    """Clicks at (x, y) (default: where the pointer is). Movement is
    immediate: duration and tween are accepted and ignored."""
    x, y = _point(x, y)
    b = _button(button)
    if not isinstance(clicks, int) or clicks < 0:
        raise ValueError("clicks must be a whole number >= 0, not %r" % (clicks,))
    if clicks == 0:
        _act({"type": "move", "x": x, "y": y}, _pause)
        return
    if clicks == 2 and not interval and b == "left":
        _act({"type": "double_click", "x": x, "y": y}, _pause)
        return
    for i in range(clicks):
        if i and interval:
            _time.sleep(interval)
        _act({"type": "click", "x": x, "y": y, "button": b}, _pause and i == clicks - 1)


def leftClick(x=None, y=None, interval=0.0, duration=0.0, tween=None, _pause=True):
    click(x, y, 1, interval, LEFT, _pause=_pause)


def rightClick(x=None, y=None, interval=0.0, duration=0.0, tween=None, _pause=True):
    click(x, y, 1, interval, RIGHT, _pause=_pause)


def middleClick(x=None, y=None, interval=0.0, duration=0.0, tween=None, _pause=True):
    click(x, y, 1, interval, MIDDLE, _pause=_pause)


def doubleClick(x=None, y=None, interval=0.0, button=LEFT, duration=0.0, tween=None, _pause=True):
    click(x, y, 2, interval, button, _pause=_pause)


def tripleClick(x=None, y=None, interval=0.0, button=LEFT, duration=0.0, tween=None, _pause=True):
    click(x, y, 3, interval, button, _pause=_pause)


def moveTo(x=None, y=None, duration=0.0, tween=None, logScreenshot=False, _pause=True):
    """Moves the pointer to (x, y) at once."""
    x, y = _point(x, y)
    _act({"type": "move", "x": x, "y": y}, _pause)


def moveRel(xOffset=None, yOffset=None, duration=0.0, tween=None, logScreenshot=False, _pause=True):
    """Moves the pointer by (xOffset, yOffset)."""
    if isinstance(xOffset, (tuple, list)):
        xOffset, yOffset = xOffset
    px, py = position()
    moveTo(px + _coord(xOffset or 0, "xOffset"), py + _coord(yOffset or 0, "yOffset"), _pause=_pause)


move = moveRel


def dragTo(x=None, y=None, duration=0.0, tween=None, button=PRIMARY, logScreenshot=None, _pause=True,
           mouseDownUp=True):
    """Drags from where the pointer is to (x, y) with button held."""
    x, y = _point(x, y)
    b = _button(button)
    if not mouseDownUp:
        moveTo(x, y, _pause=_pause)
        return
    px, py = position()
    if b == "left":
        _act({"type": "drag", "path": [{"x": px, "y": py}, {"x": x, "y": y}]}, _pause)
        return
    mouseDown(button=b, _pause=False)
    moveTo(x, y, _pause=False)
    mouseUp(button=b, _pause=_pause)


def dragRel(xOffset=0, yOffset=0, duration=0.0, tween=None, button=PRIMARY, logScreenshot=None, _pause=True,
            mouseDownUp=True):
    """Drags by (xOffset, yOffset) from where the pointer is."""
    if isinstance(xOffset, (tuple, list)):
        xOffset, yOffset = xOffset
    px, py = position()
    dragTo(px + _coord(xOffset, "xOffset"), py + _coord(yOffset, "yOffset"), button=button, _pause=_pause,
           mouseDownUp=mouseDownUp)


drag = dragRel


def mouseDown(x=None, y=None, button=PRIMARY, duration=0.0, tween=None, logScreenshot=None, _pause=True):
    """Presses button (after moving to (x, y) if given) and keeps it down
    until mouseUp or the end of the call."""
    b = _button(button)
    if x is not None or y is not None:
        moveTo(x, y, _pause=False)
    _hold(True, button=b, _pause=_pause)


def mouseUp(x=None, y=None, button=PRIMARY, duration=0.0, tween=None, logScreenshot=None, _pause=True):
    b = _button(button)
    if x is not None or y is not None:
        moveTo(x, y, _pause=False)
    _hold(False, button=b, _pause=_pause)


def _wheel(x, y, steps_x, steps_y, _pause):
    if isinstance(x, (tuple, list)) or x is not None or y is not None:
        x, y = _point(x, y)
    else:
        x, y = position()
    _agentd.call({"op": "wheel", "x": x, "y": y, "steps_x": steps_x, "steps_y": steps_y,
                  "failsafe": bool(FAILSAFE)})
    _pause_after(_pause)


def scroll(clicks, x=None, y=None, logScreenshot=None, _pause=True):
    """Turns the wheel by clicks steps: positive scrolls up, negative down."""
    _wheel(x, y, 0, -_coord(clicks, "clicks"), _pause)


vscroll = scroll


def hscroll(clicks, x=None, y=None, logScreenshot=None, _pause=True):
    """Turns the wheel sideways: positive scrolls right, negative left."""
    _wheel(x, y, _coord(clicks, "clicks"), 0, _pause)


def _keys(keys):
    if isinstance(keys, str):
        return [keys]
    return list(keys)


def _press_one(key, _pause):
    if len(key) == 1 and key not in _KEYS:
        # A character is typed as itself, capitals and symbols included.
        _act({"type": "type", "text": key}, _pause)
    else:
        _act({"type": "keypress", "keys": [_keyname(key)]}, _pause)


def press(keys, presses=1, interval=0.0, logScreenshot=None, _pause=True):
    """Presses and releases each key in turn, presses times."""
    keys = _keys(keys)
    for k in keys:
        _keyname(k)
    for i in range(presses):
        for j, k in enumerate(keys):
            if (i or j) and interval:
                _time.sleep(interval)
            _press_one(k, _pause and i == presses - 1 and j == len(keys) - 1)


def hotkey(*args, **kwargs):
    """Presses the keys together and releases them in reverse order."""
    interval = kwargs.get("interval", 0.0)
    _pause = kwargs.get("_pause", True)
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = tuple(args[0])
    names = [_keyname(k) for k in args]
    if not names:
        raise ValueError("hotkey needs at least one key")
    if not interval:
        _act({"type": "keypress", "keys": names}, _pause)
        return
    for k in names:
        _hold(True, key=k, _pause=False)
        _time.sleep(interval)
    for k in reversed(names):
        _hold(False, key=k, _pause=False)
        _time.sleep(interval)
    _pause_after(_pause)


shortcut = hotkey


def keyDown(key, logScreenshot=None, _pause=True):
    """Presses key and keeps it down until keyUp or the end of the call."""
    _hold(True, key=_keyname(key), _pause=_pause)


def keyUp(key, logScreenshot=None, _pause=True):
    _hold(False, key=_keyname(key), _pause=_pause)


class _Hold:
    def __init__(self, keys):
        self.keys = [_keyname(k) for k in _keys(keys)]

    def __enter__(self):
        for k in self.keys:
            _hold(True, key=k, _pause=False)

    def __exit__(self, *exc):
        for k in reversed(self.keys):
            _hold(False, key=k, _pause=False)


def hold(keys, logScreenshot=None, _pause=True):
    """with pyautogui.hold('shift'): ... keeps the keys down inside."""
    return _Hold(keys)


def write(message, interval=0.0, logScreenshot=None, _pause=True):
    """Types a string exactly (any Unicode), or presses a list of key names."""
    if isinstance(message, str):
        if not interval:
            # In pieces agentd takes in one action (64 KiB of UTF-8).
            for i in range(0, len(message), 16384):
                _act({"type": "type", "text": message[i:i + 16384]}, _pause and i + 16384 >= len(message))
            return
        message = list(message)
    for i, k in enumerate(message):
        if i:
            _time.sleep(interval)
        _press_one(k, False)
    _pause_after(_pause)


typewrite = write


def screenshot(imageFilename=None, region=None, allScreens=False):
    """The screen as the model sees it (the session's view), a PIL image;
    region=(left, top, width, height) in the same coordinates crops it."""
    from PIL import Image

    rep, data = _agentd.call({"op": "screenshot"})
    im = Image.frombytes("RGB", (rep["width"], rep["height"]), data, "raw", "RGBX")
    if region is not None:
        left, top, w, h = (_coord(v, "region") for v in region)
        if w <= 0 or h <= 0 or left < 0 or top < 0 or left + w > im.width or top + h > im.height:
            raise OutOfScreenError("region %r is not inside the %dx%d screen" % (tuple(region), im.width, im.height))
        im = im.crop((left, top, left + w, top + h))
    if imageFilename is not None:
        im.save(imageFilename)
    return im


def pixel(x, y):
    """The (r, g, b) colour at (x, y)."""
    x, y = _point(x, y)
    if not onScreen(x, y):
        raise OutOfScreenError("(%d, %d) is outside the %dx%d screen" % (x, y, _size.width, _size.height))
    return screenshot(region=(x, y, 1, 1)).getpixel((0, 0))


def pixelMatchesColor(x, y, expectedRGBColor, tolerance=0):
    got = pixel(x, y)
    return all(abs(a - b) <= tolerance for a, b in zip(got, expectedRGBColor[:3]))


def sleep(seconds):
    _time.sleep(seconds)


def settle():
    """agentd's addition: returns once the screen has stopped changing (or
    after a few seconds), as the computer tool's wait action does."""
    _agentd.call({"op": "act", "action": {"type": "wait"}, "failsafe": False})


def countdown(seconds):
    for i in range(seconds, 0, -1):
        print(str(i), end=" ", flush=True)
        _time.sleep(1)
    print()


def failSafeCheck():
    if FAILSAFE and tuple(position()) in FAILSAFE_POINTS:
        raise FailSafeException("PyAutoGUI fail-safe triggered from the pointer in a corner of the screen.")


def _not_available(name, why):
    def f(*args, **kwargs):
        raise NotImplementedError("pyautogui.%s is not available in agentd's pyautogui: %s" % (name, why))

    f.__name__ = name
    return f


for _name in ("locateOnScreen", "locateCenterOnScreen", "locateAllOnScreen", "locateAll", "locate",
              "locateOnWindow", "center"):
    globals()[_name] = _not_available(_name, "image search is not offered; use screenshot() and display()")
for _name in ("alert", "confirm", "prompt", "password"):
    globals()[_name] = _not_available(_name, "there is nobody at the desktop to answer a dialog")
for _name in ("getWindowsWithTitle", "getActiveWindow", "getAllWindows", "getAllTitles", "getWindowsAt",
              "mouseInfo", "displayMousePosition", "run"):
    globals()[_name] = _not_available(_name, "not offered")
del _name
