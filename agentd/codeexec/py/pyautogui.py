"""pyautogui for agentd's code-execution mode.

The functions models write with PyAutoGUI, performed by agentd's own
executor: the same key names, Unicode typing, held modifiers and release on
error as the computer tool. Coordinates are those of the session's view (the
image the model sees, maybe scaled or cropped); agentd maps them to the
screen. A point outside the view raises, it is never clamped.
"""

import collections
import collections.abc
import math as _math
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
LOG_SCREENSHOTS_LIMIT = 10
G_LOG_SCREENSHOTS_FILENAMES = []

# pyautogui's keyboard layouts (only their characters; typing uses the text as it is).
QWERTY = r"""`1234567890-=qwertyuiop[]\asdfghjkl;'zxcvbnm,./~!@#$%^&*()_+QWERTYUIOP{}|ASDFGHJKL:"ZXCVBNM<>?"""
QWERTZ = r"""=1234567890/0qwertzuiop89-asdfghjkl,\yxcvbnm,.7+!@#$%^&*()?)QWERTZUIOP*(_ASDFGHJKL<|YXCVBNM<>&"""


class PyAutoGUIException(Exception):
    """The base of this module's exceptions."""


class FailSafeException(PyAutoGUIException):
    """The pointer was in a corner of the screen while FAILSAFE was on."""


class ImageNotFoundException(PyAutoGUIException):
    pass


class OutOfScreenError(PyAutoGUIException, ValueError):
    """A point outside the screen (the session's view)."""


class PointValueError(PyAutoGUIException, ValueError):
    """A point given in a shape pyautogui does not take (a ValueError there too)."""


class PointTypeError(PyAutoGUIException, TypeError):
    """A point given with a part missing or not a number (a TypeError there too)."""


class NotAvailableError(PyAutoGUIException, NotImplementedError):
    """A pyautogui function this module does not offer (image search, dialogs)."""


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
    "\t": "Tab", "\n": "Return", "\r": "Return", " ": "space", "\b": "BackSpace",
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
        raise PointTypeError("%s must be a number, not %r" % (what, v))
    return int(v)


def _unpack(x, y):
    """pyautogui's ways of giving a point: x, y; (x, y); a box (left, top,
    width, height) for its centre. Image search by file name is not offered."""
    if isinstance(x, str):
        raise NotAvailableError("locating an image on the screen (%r) is not available in agentd's pyautogui" % x)
    if isinstance(x, collections.abc.Sequence):
        if y is not None:
            raise PointValueError("with a sequence as x, give no y (got %r)" % (y,))
        if len(x) == 2:
            x, y = x
        elif len(x) == 4:
            x, y = center(x)
        else:
            raise PointValueError("a point is 2 numbers, or a box 4, not %d: %r" % (len(x), x))
    return x, y


def _point(x, y):
    """A point as _unpack reads it; a None coordinate is the pointer's."""
    x, y = _unpack(x, y)
    if x is None or y is None:
        px, py = position()
        x = px if x is None else x
        y = py if y is None else y
    return _coord(x, "x"), _coord(y, "y")


def _act(action, _pause=True, pause=None):
    _agentd.call({"op": "act", "action": action, "failsafe": bool(FAILSAFE)})
    _pause_after(_pause, pause)


def _hold(down, key=None, button=None, _pause=True, pause=None):
    head = {"op": "hold", "down": down, "failsafe": bool(FAILSAFE)}
    if key is not None:
        head["key"] = key
    else:
        head["button"] = button
    _agentd.call(head)
    _pause_after(_pause, pause)


def _pause_after(_pause, pause=None):
    """pyautogui's pause after a call: pause seconds if given, else PAUSE."""
    if pause is not None:
        _time.sleep(pause)
    elif _pause and PAUSE:
        _time.sleep(PAUSE)


# Tweens: pyautogui's (pytweening's) easing functions, the standard Penner
# equations. Each maps progress n in [0, 1] to the share of the way covered,
# 0 at 0 and 1 at 1 (the elastic and back ones overshoot in between).
def _tween(f):
    def tween(n, *args, **kwargs):
        if not 0.0 <= n <= 1.0:
            raise ValueError("a tween's argument must be between 0.0 and 1.0, not %r" % (n,))
        if n == 0 or n == 1:
            return float(n)
        return f(n, *args, **kwargs)

    tween.__name__ = f.__name__
    tween.__doc__ = f.__doc__
    return tween


def _in_out(ease_in, ease_out):
    return lambda n, *a, **k: ease_in(2 * n, *a, **k) / 2 if n < 0.5 else 0.5 + ease_out(2 * n - 1, *a, **k) / 2


def getPointOnLine(x1, y1, x2, y2, n):
    """The (x, y) a share n of the way from (x1, y1) to (x2, y2)."""
    return ((x2 - x1) * n) + x1, ((y2 - y1) * n) + y1


@_tween
def linear(n):
    return n


def _power_tweens(p):
    def ease_in(n):
        return n ** p

    def ease_out(n):
        return 1 - (1 - n) ** p

    return ease_in, ease_out, _in_out(ease_in, ease_out)


easeInQuad, easeOutQuad, easeInOutQuad = (_tween(f) for f in _power_tweens(2))
easeInCubic, easeOutCubic, easeInOutCubic = (_tween(f) for f in _power_tweens(3))
easeInQuart, easeOutQuart, easeInOutQuart = (_tween(f) for f in _power_tweens(4))
easeInQuint, easeOutQuint, easeInOutQuint = (_tween(f) for f in _power_tweens(5))


def _sine_in(n):
    return 1 - _math.cos(n * _math.pi / 2)


def _sine_out(n):
    return _math.sin(n * _math.pi / 2)


easeInSine, easeOutSine = _tween(_sine_in), _tween(_sine_out)
easeInOutSine = _tween(lambda n: (1 - _math.cos(_math.pi * n)) / 2)


def _expo_in(n):
    return 2 ** (10 * (n - 1)) if n else 0.0


def _expo_out(n):
    return 1 - 2 ** (-10 * n) if n != 1 else 1.0


easeInExpo, easeOutExpo, easeInOutExpo = _tween(_expo_in), _tween(_expo_out), _tween(_in_out(_expo_in, _expo_out))


def _circ_in(n):
    return 1 - _math.sqrt(1 - n * n)


def _circ_out(n):
    return _math.sqrt(1 - (n - 1) ** 2)


easeInCirc, easeOutCirc, easeInOutCirc = _tween(_circ_in), _tween(_circ_out), _tween(_in_out(_circ_in, _circ_out))


def _elastic_out(n, amplitude=1, period=0.3):
    if n in (0, 1):
        return float(n)
    if amplitude < 1:
        amplitude, s = 1, period / 4
    else:
        s = period / (2 * _math.pi) * _math.asin(1 / amplitude)
    return amplitude * 2 ** (-10 * n) * _math.sin((n - s) * (2 * _math.pi / period)) + 1


def _elastic_in(n, amplitude=1, period=0.3):
    return 1 - _elastic_out(1 - n, amplitude, period)


easeInElastic, easeOutElastic = _tween(_elastic_in), _tween(_elastic_out)


@_tween
def easeInOutElastic(n, amplitude=1, period=0.5):
    return _in_out(_elastic_in, _elastic_out)(n, amplitude, period)


def _back_in(n, s=1.70158):
    return n * n * ((s + 1) * n - s)


def _back_out(n, s=1.70158):
    return 1 - _back_in(1 - n, s)


easeInBack, easeOutBack = _tween(_back_in), _tween(_back_out)


@_tween
def easeInOutBack(n, s=1.70158):
    return _in_out(_back_in, _back_out)(n, s * 1.525)


def _bounce_out(n):
    if n < 1 / 2.75:
        return 7.5625 * n * n
    if n < 2 / 2.75:
        n -= 1.5 / 2.75
        return 7.5625 * n * n + 0.75
    if n < 2.5 / 2.75:
        n -= 2.25 / 2.75
        return 7.5625 * n * n + 0.9375
    n -= 2.625 / 2.75
    return 7.5625 * n * n + 0.984375


def _bounce_in(n):
    return 1 - _bounce_out(1 - n)


easeInBounce, easeOutBounce, easeInOutBounce = (_tween(_bounce_in), _tween(_bounce_out),
                                                _tween(_in_out(_bounce_in, _bounce_out)))


def size():
    """The screen's size as the model sees it: the session's view."""
    return _size


resolution = size


def position(x=None, y=None):
    """The pointer's position in the view; x or y, if given, replace it."""
    rep, _ = _agentd.call({"op": "position"})
    return Point(int(x) if x is not None else rep["x"], int(y) if y is not None else rep["y"])


def onScreen(x, y=None):
    """Whether (x, y), or the point x, is on the screen (the session's view)."""
    x, y = _unpack(x, y)
    if x is None or y is None:
        raise PointTypeError("onScreen needs both coordinates, got x=%r y=%r" % (x, y))
    x, y = _coord(x, "x"), _coord(y, "y")
    return 0 <= x < _size.width and 0 <= y < _size.height


def center(coords):
    """The centre Point of a box (left, top, width, height)."""
    return Point(coords[0] + int(coords[2] / 2), coords[1] + int(coords[3] / 2))


def _glide(x, y, duration, tween):
    """The points a move to (x, y) passes, as pyautogui plans them: with a
    duration over MINIMUM_DURATION, steps along the tween at least
    MINIMUM_SLEEP apart, else one step. Intermediate points are kept inside
    the view (a tween may overshoot); the last is (x, y) itself."""
    if not duration or duration <= MINIMUM_DURATION:
        return [(x, y)], 0.0
    if tween is None:
        tween = linear
    sx, sy = position()
    w, h = _size
    steps = max(w, h)
    nap = duration / steps
    if nap < MINIMUM_SLEEP:
        steps = int(duration / MINIMUM_SLEEP)
        nap = duration / steps
    points = []
    for i in range(steps):
        px, py = getPointOnLine(sx, sy, x, y, tween(i / steps))
        points.append((min(max(int(round(px)), 0), w - 1), min(max(int(round(py)), 0), h - 1)))
    points.append((x, y))
    return points, nap


def _move(x, y, duration, tween):
    """Moves the pointer to (x, y), over duration along tween."""
    points, nap = _glide(x, y, duration, tween)
    last = None
    for p in points:
        if nap:
            _time.sleep(nap)
        if p != last:
            _act({"type": "move", "x": p[0], "y": p[1]}, False)
            last = p


def click(x=None, y=None, clicks=1, interval=0.0, button=PRIMARY, duration=0.0, tween=linear, pause=None,
          logScreenshot=None, _pause=True):
    """Clicks at (x, y) (default: where the pointer is), moving there over
    duration along tween first if duration is given."""
    x, y = _point(x, y)
    b = _button(button)
    if not isinstance(clicks, int) or clicks < 0:
        raise ValueError("clicks must be a whole number >= 0, not %r" % (clicks,))
    if duration and duration > MINIMUM_DURATION:
        _move(x, y, duration, tween)
    if clicks == 0:
        _act({"type": "move", "x": x, "y": y}, _pause, pause)
        return
    if clicks == 2 and not interval and b == "left":
        _act({"type": "double_click", "x": x, "y": y}, _pause, pause)
        return
    for i in range(clicks):
        if i and interval:
            _time.sleep(interval)
        last = i == clicks - 1
        _act({"type": "click", "x": x, "y": y, "button": b}, _pause and last, pause if last else None)


def leftClick(x=None, y=None, interval=0.0, duration=0.0, tween=linear, pause=None, logScreenshot=None, _pause=True):
    click(x, y, 1, interval, LEFT, duration, tween, pause, _pause=_pause)


def rightClick(x=None, y=None, interval=0.0, duration=0.0, tween=linear, pause=None, logScreenshot=None, _pause=True):
    click(x, y, 1, interval, RIGHT, duration, tween, pause, _pause=_pause)


def middleClick(x=None, y=None, interval=0.0, duration=0.0, tween=linear, pause=None, logScreenshot=None,
                _pause=True):
    click(x, y, 1, interval, MIDDLE, duration, tween, pause, _pause=_pause)


def doubleClick(x=None, y=None, interval=0.0, button=LEFT, duration=0.0, tween=linear, pause=None,
                logScreenshot=None, _pause=True):
    click(x, y, 2, interval, button, duration, tween, pause, _pause=_pause)


def tripleClick(x=None, y=None, interval=0.0, button=LEFT, duration=0.0, tween=linear, pause=None,
                logScreenshot=None, _pause=True):
    click(x, y, 3, interval, button, duration, tween, pause, _pause=_pause)


def moveTo(x=None, y=None, duration=0.0, tween=linear, pause=None, logScreenshot=False, _pause=True):
    """Moves the pointer to (x, y): at once, or over duration seconds along
    tween (a function of pyautogui's, like easeInOutQuad)."""
    x, y = _point(x, y)
    _move(x, y, duration, tween)
    _pause_after(_pause, pause)


def moveRel(xOffset=None, yOffset=None, duration=0.0, tween=linear, pause=None, logScreenshot=False, _pause=True):
    """Moves the pointer by (xOffset, yOffset)."""
    if isinstance(xOffset, (tuple, list)):
        xOffset, yOffset = xOffset
    px, py = position()
    moveTo(px + _coord(xOffset or 0, "xOffset"), py + _coord(yOffset or 0, "yOffset"), duration, tween, pause,
           _pause=_pause)


move = moveRel


def dragTo(x=None, y=None, duration=0.0, tween=linear, button=PRIMARY, pause=None, logScreenshot=None, _pause=True,
           mouseDownUp=True):
    """Drags from where the pointer is to (x, y) with button held, over
    duration along tween if given."""
    x, y = _point(x, y)
    b = _button(button)
    if not mouseDownUp:
        moveTo(x, y, duration, tween, pause, _pause=_pause)
        return
    if b == "left" and not (duration and duration > MINIMUM_DURATION):
        px, py = position()
        _act({"type": "drag", "path": [{"x": px, "y": py}, {"x": x, "y": y}]}, _pause, pause)
        return
    mouseDown(button=b, _pause=False)
    _move(x, y, duration, tween)
    mouseUp(button=b, pause=pause, _pause=_pause)


def dragRel(xOffset=0, yOffset=0, duration=0.0, tween=linear, button=PRIMARY, pause=None, logScreenshot=None,
            _pause=True, mouseDownUp=True):
    """Drags by (xOffset, yOffset) from where the pointer is."""
    if isinstance(xOffset, (tuple, list)):
        xOffset, yOffset = xOffset
    px, py = position()
    dragTo(px + _coord(xOffset or 0, "xOffset"), py + _coord(yOffset or 0, "yOffset"), duration, tween, button,
           pause, _pause=_pause, mouseDownUp=mouseDownUp)


drag = dragRel


def mouseDown(x=None, y=None, button=PRIMARY, duration=0.0, tween=linear, pause=None, logScreenshot=None,
              _pause=True):
    """Presses button (after moving to (x, y) if given) and keeps it down
    until mouseUp or the end of the call."""
    b = _button(button)
    if x is not None or y is not None:
        moveTo(x, y, _pause=False)
    _hold(True, button=b, _pause=_pause, pause=pause)


def mouseUp(x=None, y=None, button=PRIMARY, duration=0.0, tween=linear, pause=None, logScreenshot=None,
            _pause=True):
    b = _button(button)
    if x is not None or y is not None:
        moveTo(x, y, _pause=False)
    _hold(False, button=b, _pause=_pause, pause=pause)


def _wheel(x, y, steps_x, steps_y, _pause, pause=None):
    if isinstance(x, (tuple, list)) or x is not None or y is not None:
        x, y = _point(x, y)
    else:
        x, y = position()
    _agentd.call({"op": "wheel", "x": x, "y": y, "steps_x": steps_x, "steps_y": steps_y,
                  "failsafe": bool(FAILSAFE)})
    _pause_after(_pause, pause)


def scroll(clicks, x=None, y=None, pause=None, logScreenshot=None, _pause=True):
    """Turns the wheel by clicks steps: positive scrolls up, negative down."""
    _wheel(x, y, 0, -_coord(clicks, "clicks"), _pause, pause)


vscroll = scroll


def hscroll(clicks, x=None, y=None, pause=None, logScreenshot=None, _pause=True):
    """Turns the wheel sideways: positive scrolls right, negative left."""
    _wheel(x, y, _coord(clicks, "clicks"), 0, _pause, pause)


def _keys(keys):
    if isinstance(keys, str):
        return [keys]
    return list(keys)


def _press_one(key, _pause, pause=None):
    if len(key) == 1 and key not in _KEYS:
        # A character is typed as itself, capitals and symbols included.
        _act({"type": "type", "text": key}, _pause, pause)
    else:
        _act({"type": "keypress", "keys": [_keyname(key)]}, _pause, pause)


def isShiftCharacter(character):
    """Whether the character is typed with Shift on a US keyboard."""
    return character.isupper() or character in '~!@#$%^&*()_+{}|:"<>?'


def press(keys, presses=1, interval=0.0, pause=None, logScreenshot=None, _pause=True):
    """Presses and releases each key in turn, presses times."""
    keys = _keys(keys)
    for k in keys:
        _keyname(k)
    for i in range(presses):
        for j, k in enumerate(keys):
            if (i or j) and interval:
                _time.sleep(interval)
            last = i == presses - 1 and j == len(keys) - 1
            _press_one(k, _pause and last, pause if last else None)


def hotkey(*args, **kwargs):
    """Presses the keys together and releases them in reverse order."""
    interval = kwargs.get("interval", 0.0)
    _pause = kwargs.get("_pause", True)
    pause = kwargs.get("pause")
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = tuple(args[0])
    names = [_keyname(k) for k in args]
    if not names:
        raise ValueError("hotkey needs at least one key")
    if not interval:
        _act({"type": "keypress", "keys": names}, _pause, pause)
        return
    for k in names:
        _hold(True, key=k, _pause=False)
        _time.sleep(interval)
    for k in reversed(names):
        _hold(False, key=k, _pause=False)
        _time.sleep(interval)
    _pause_after(_pause, pause)


shortcut = hotkey


def keyDown(key, pause=None, logScreenshot=None, _pause=True):
    """Presses key and keeps it down until keyUp or the end of the call."""
    _hold(True, key=_keyname(key), _pause=_pause, pause=pause)


def keyUp(key, pause=None, logScreenshot=None, _pause=True):
    _hold(False, key=_keyname(key), _pause=_pause, pause=pause)


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


# Characters write presses as keys, as pyautogui does: Backspace, Tab, Enter.
_WRITE_KEYS = "\b\t\n\r"


def write(message, interval=0.0, pause=None, logScreenshot=None, _pause=True):
    """Types a string exactly (any Unicode; \\b, \\t, \\n and \\r press
    Backspace, Tab and Enter), or presses a list of key names."""
    if isinstance(message, str) and not interval:
        start = 0
        for end in range(len(message) + 1):
            if end < len(message) and message[end] not in _WRITE_KEYS:
                continue
            # Text in pieces agentd takes in one action (64 KiB of UTF-8).
            for i in range(start, end, 16384):
                _act({"type": "type", "text": message[i:min(i + 16384, end)]}, False)
            if end < len(message):
                _act({"type": "keypress", "keys": [_KEYS[message[end]]]}, False)
            start = end + 1
        _pause_after(_pause, pause)
        return
    for i, k in enumerate(message):
        if i:
            _time.sleep(interval)
        _press_one(k, False)
    _pause_after(_pause, pause)


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


grab = screenshot


def useImageNotFoundException(value=None):
    """Accepted for pyautogui's sake: image search is not offered anyway."""


def _not_available(name, why):
    def f(*args, **kwargs):
        raise NotAvailableError("pyautogui.%s is not available in agentd's pyautogui: %s" % (name, why))

    f.__name__ = name
    return f


for _name in ("locateOnScreen", "locateCenterOnScreen", "locateAllOnScreen", "locateAll", "locate",
              "locateOnWindow"):
    globals()[_name] = _not_available(_name, "image search is not offered; use screenshot() and display()")
for _name in ("alert", "confirm", "prompt", "password"):
    globals()[_name] = _not_available(_name, "there is nobody at the desktop to answer a dialog")
for _name in ("getWindowsWithTitle", "getActiveWindow", "getActiveWindowTitle", "getAllWindows", "getAllTitles",
              "getWindowsAt", "Window", "mouseInfo", "displayMousePosition", "run"):
    globals()[_name] = _not_available(_name, "not offered")
del _name
